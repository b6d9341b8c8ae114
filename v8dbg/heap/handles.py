"""What keeps node's event loop alive: libuv handles and requests, and timers.

Found without a JS frame on the stack: every native context V8 keeps holds,
in its embedder data, node's `Environment*` (ContextEmbedderIndex::
kEnvironment). The Environment's handle_wrap_queue_ and req_wrap_queue_ are
intrusive lists of node's HandleWrap / ReqWrap objects (offsets from the
binary's nodedbg_* symbols); each wrap's vtable names its C++ class, its
libuv handle says active / ref'd / fd, its persistent handle leads to the JS
object. Timers live in JS: the Timeout and Immediate objects on the heap,
and the counts node keeps in its `timers` binding (timeoutInfo,
immediateInfo) -- the same numbers process.getActiveResourcesInfo() reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..v8 import layouts, nodedbg
from . import census
from .groups import groups, instances

if TYPE_CHECKING:
    from ..program import Program

MAX_WRAPS = 1 << 17  # wraps followed along one queue before it is called damaged
MAX_FUNCTIONS = 4096  # functions whose contexts are followed to their native context
MAX_CONTEXT_CHAIN = 256
MAX_TIMERS = 1 << 16  # Timeout / Immediate objects described


@dataclass
class Wrap:
    """One HandleWrap or ReqWrap of node, and what it holds."""

    kind: str  # "handle" or "request"
    address: int  # the C++ object
    type: str  # as process.getActiveResourcesInfo() names it (its MemoryInfoName)
    cpp_class: str | None
    provider: str | None  # AsyncWrap provider (TCPSERVERWRAP, FSREQCALLBACK, ...)
    counted: bool  # among process.getActiveResourcesInfo()'s entries
    object: int | None = None  # the JS object that wraps it
    object_constructor: str | None = None
    owner: int | None = None  # what node's JS made it for (a Server, a Socket)
    owner_constructor: str | None = None
    uv_handle: int | None = None
    active: bool | None = None
    refed: bool | None = None
    closing: bool | None = None
    fd: int | None = None


@dataclass
class Timer:
    """A Timeout or Immediate object still waiting to run."""

    kind: str  # "Timeout" or "Immediate"
    address: int
    refed: bool
    callback: dict | None  # the function's VALUE (name, script, line, column)
    ms: float | None = None  # the timer's delay
    start: float | None = None  # when it was (re)armed, on the event loop's clock (ms)
    due: float | None = None  # start + ms
    repeat: float | None = None  # setInterval's period


@dataclass
class EnvHandles:
    """One node Environment's resources."""

    environment: int
    resources: list[str]
    handles: list[Wrap]
    requests: list[Wrap]
    timers: list[Timer]
    warnings: list[str] = field(default_factory=list)


# -- the Environment --------------------------------------------------------------------------

def _native_contexts(prog: Program, heap: int) -> list[int]:
    """The native contexts of the heap, reached from its functions' contexts."""
    c = census.of(prog, heap)
    h = prog.heap
    md = prog.md
    lo, hi = md.consts.get("FirstJSFunctionType"), md.consts.get("LastJSFunctionType")
    native = md.types.get("NATIVE_CONTEXT_TYPE")
    prev = md.const("context_idx_prev")
    clo, chi = md.const("FirstContextType"), md.const("LastContextType")
    found: list[int] = []
    seen: set[int] = set()
    budget = MAX_FUNCTIONS
    for st in c.maps.values():
        if st.addresses is None or lo is None or not lo <= st.instance_type <= hi:
            continue
        for fn in list(st.addresses[:8]):
            if budget <= 0:
                return found
            budget -= 1
            try:
                ctx = h.field(fn, "JSFunction", "context")
                for _ in range(MAX_CONTEXT_CHAIN):
                    if not h.is_heap(ctx) or ctx in seen:
                        break
                    t = h.instance_type(ctx)
                    if t == native:
                        seen.add(ctx)
                        found.append(ctx)
                        break
                    if not clo <= t <= chi:
                        break
                    seen.add(ctx)
                    ctx = h.array_get(ctx, prev)
            except (DecodeError, TargetMemoryError):
                continue
    return found


def environments(prog: Program, heap: int, vals: dict[str, int]) -> list[int]:
    """The Environment* node stored in the heap's native contexts (each once)."""
    h = prog.heap
    mem = prog.mem
    facts = layouts.node_facts(prog.md.v8_version)
    index = nodedbg.need(vals, "const_ContextEmbedderIndex__kEnvironment__int")
    ed_off = prog.md.const("native_context_embedder_data_offset")
    ed_type = prog.md.types.get("EMBEDDER_DATA_ARRAY_TYPE")
    out: list[int] = []
    for nc in _native_contexts(prog, heap):
        try:
            ed = mem.u64(nc - 1 + ed_off)
            if not h.is_heap(ed) or (ed_type is not None and h.instance_type(ed) != ed_type):
                continue
            if h.smi(mem.u64(ed - 1 + 8)) <= index:
                continue
            env = mem.u64(ed - 1 + facts["EmbedderDataHeader"] + index *
                          facts["EmbedderDataSlotSize"])
        except (DecodeError, TargetMemoryError):
            continue
        if env and env % 8 == 0 and env not in out and mem.readable(env, 8):
            out.append(env)
    return out


# -- the wrap queues --------------------------------------------------------------------------

def _queue(prog: Program, head: int, next_off: int, prev_off: int, what: str) -> list[int]:
    """The nodes of a ListNode ring from its head, checked link by link."""
    mem = prog.mem
    nodes: list[int] = []
    at = head
    for _ in range(MAX_WRAPS):
        try:
            nxt = mem.u64(at + next_off)
            back = mem.u64(nxt + prev_off)
        except TargetMemoryError:
            raise V8DbgError(f"node's {what} is damaged: its link at 0x{at:x} points to "
                             "unreadable memory") from None
        if back != at:
            raise V8DbgError(f"node's {what} is damaged: 0x{nxt:x} does not link back to "
                             f"0x{at:x}")
        if nxt == head:
            return nodes
        nodes.append(nxt)
        at = nxt
    raise V8DbgError(f"node's {what} has more than {MAX_WRAPS} entries (damaged?)")


_VTABLE = re.compile(r"^vtable for (.*)$")


def _cpp_class(prog: Program, obj: int) -> str | None:
    """The C++ class of a polymorphic object, from the symbol of its vtable."""
    try:
        vt = prog.mem.u64(obj)
    except TargetMemoryError:
        return None
    sym = prog.symbolize(vt)
    if sym is None:
        return None
    m = _VTABLE.match(sym.name)
    return m.group(1) if m else None


def _short_class(cpp: str) -> str:
    """node::fs::FSReqCallback -> FSReqCallback; templates lose their arguments."""
    depth = 0
    base = ""
    for ch in cpp:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            base += ch
    return base.rsplit("::", 1)[-1].strip()


def _memory_info_name(cpp: str | None, provider: str | None) -> str:
    """The name node's MemoryInfoName() gives: the class's, but TCPWrap says
    which of its two kinds it is."""
    if cpp is None:
        return provider or "unknown"
    name = _short_class(cpp)
    if name == "TCPWrap":
        if provider == "TCPSERVERWRAP":
            return "TCPServerWrap"
        if provider == "TCPWRAP":
            return "TCPSocketWrap"
    return name


def _providers(prog: Program, heap: int) -> dict[int, str]:
    """AsyncWrap provider numbers -> names, from async_wrap's `Providers` object."""
    v = prog.values
    h = prog.heap
    for g in groups(prog, heap):
        if "TCPSERVERWRAP" in g.properties and "FSREQCALLBACK" in g.properties:
            out: dict[int, str] = {}
            try:
                for p in v.own_properties(g.representative, 1024):
                    if not p.accessor and h.is_smi(p.value) and v.is_string(p.key):
                        out[h.smi(p.value)] = v.s.text(p.key, 64)
            except (DecodeError, TargetMemoryError):
                continue
            return out
    return {}


def _js_object(prog: Program, wrap: int, persistent_off: int) -> int | None:
    """The JS object a BaseObject's persistent handle holds (None: empty handle)."""
    mem = prog.mem
    try:
        slot = mem.u64(wrap + persistent_off)
        if not slot:
            return None
        obj = mem.u64(slot)
    except TargetMemoryError:
        return None
    return obj if prog.heap.is_heap(obj) else None


def _describe_object(prog: Program, w: Wrap) -> None:
    v = prog.values
    if w.object is None:
        return
    try:
        w.object_constructor = v.constructor_name(w.object)
        owner = v.own_data_property(w.object, symbol_desc="owner_symbol")
    except (DecodeError, TargetMemoryError):
        return
    if owner is not None and prog.heap.is_heap(owner) and owner != w.object:
        try:
            w.owner_constructor = v.constructor_name(owner)
            w.owner = owner
        except (DecodeError, TargetMemoryError):
            pass


def _uv_handle(prog: Program, node: int, obj: int, facts: dict[str, int]) -> int:
    """A HandleWrap's libuv handle: the one whose `data` points back at the wrap."""
    for key in ("HandleWrapHandleAfterQueue", "HandleWrapHandleAfterQueueOld"):
        try:
            uv = prog.mem.u64(node + facts[key])
            if uv and prog.mem.u64(uv + facts["UvHandleData"]) == obj:
                return uv
        except TargetMemoryError:
            continue
    raise DecodeError(f"no libuv handle of 0x{obj:x} points back at it")


def _wraps(prog: Program, env: int, vals: dict[str, int], providers: dict[int, str],
           warnings: list[str]) -> tuple[list[Wrap], list[Wrap]]:
    mem = prog.mem
    facts = layouts.node_facts(prog.md.v8_version)
    need = nodedbg.need
    pers = need(vals, "offset_BaseObject__persistent_handle___v8_Persistent_v8_Object")
    offsets = layouts.node_provider_offsets(prog.md.v8_version)
    chosen: list[int] = []

    def provider_at(obj: int, off: int) -> str | None:
        try:
            name = providers.get(mem.u32(obj + off))
        except TargetMemoryError:
            return None
        return name if name != "NONE" else None

    def provider(obj: int) -> str | None:
        # The first wrap settles which offset this node build uses.
        if not chosen:
            chosen.append(next((o for o in offsets if provider_at(obj, o)), offsets[0]))
        return provider_at(obj, chosen[0])

    # Requests: counted while their JS object is there.
    head = (env + need(vals, "offset_Environment__req_wrap_queue___Environment_ReqWrapQueue")
            + need(vals, "offset_Environment_ReqWrapQueue__head___ListNode_ReqWrapQueue"))
    in_obj = need(vals, "offset_ReqWrap__req_wrap_queue___ListNode_ReqWrapQueue")
    requests: list[Wrap] = []
    for node in _queue(prog, head, need(vals, "offset_ListNode_ReqWrap__next___uintptr_t"),
                       need(vals, "offset_ListNode_ReqWrap__prev___uintptr_t"),
                       "request queue (req_wrap_queue_)"):
        obj = node - in_obj
        cpp = _cpp_class(prog, obj)
        prov = provider(obj)
        js = _js_object(prog, obj, pers)
        w = Wrap("request", obj, _memory_info_name(cpp, prov), cpp, prov, js is not None,
                 object=js)
        _describe_object(prog, w)
        requests.append(w)

    # Handles: counted while their JS object is there, not closed, and ref'd.
    head = (env + need(vals, "offset_Environment__handle_wrap_queue___Environment_HandleWrapQueue")
            + need(vals, "offset_Environment_HandleWrapQueue__head___ListNode_HandleWrap"))
    in_obj = need(vals, "offset_HandleWrap__handle_wrap_queue___ListNode_HandleWrap")
    handles: list[Wrap] = []
    for node in _queue(prog, head, need(vals, "offset_ListNode_HandleWrap__next___uintptr_t"),
                       need(vals, "offset_ListNode_HandleWrap__prev___uintptr_t"),
                       "handle queue (handle_wrap_queue_)"):
        obj = node - in_obj
        cpp = _cpp_class(prog, obj)
        prov = provider(obj)
        js = _js_object(prog, obj, pers)
        w = Wrap("handle", obj, _memory_info_name(cpp, prov), cpp, prov, False, object=js)
        try:
            uv = _uv_handle(prog, node, obj, facts)
            flags = mem.u32(uv + facts["UvHandleFlags"])
            utype = mem.u32(uv + facts["UvHandleType"])
        except (DecodeError, TargetMemoryError):
            warnings.append(f"the libuv handle of {w.type} 0x{obj:x} could not be read")
        else:
            w.uv_handle = uv
            w.active = bool(flags & facts["UvFlagActive"])
            w.refed = bool(flags & facts["UvFlagRef"])
            w.closing = bool(flags & (facts["UvFlagClosing"] | facts["UvFlagClosed"]))
            closed = bool(flags & facts["UvFlagClosed"])
            w.counted = js is not None and w.refed and not closed
            if utype in (facts["UvTypeTcp"], facts["UvTypeNamedPipe"], facts["UvTypeTty"]):
                try:
                    fd = mem.i32(uv + facts["UvStreamFd"])
                    w.fd = fd if fd >= 0 else None
                except TargetMemoryError:
                    pass
        _describe_object(prog, w)
        handles.append(w)
    return handles, requests


# -- timers -----------------------------------------------------------------------------------

def _number(prog: Program, val: int | None) -> float | None:
    h = prog.heap
    if val is None:
        return None
    if h.is_smi(val):
        return float(h.smi(val))
    try:
        if h.is_heap(val) and h.is_type(val, "HEAP_NUMBER_TYPE"):
            return prog.mem.f64(val - 1 + prog.md.off("HeapNumber", "value"))
    except (DecodeError, TargetMemoryError):
        pass
    return None


def _is_true(prog: Program, val: int | None) -> bool:
    return val is not None and prog.heap.is_heap(val) and prog.heap.oddball_name(val) == "true"


def _callback(prog: Program, fn: int | None) -> dict | None:
    if fn is None or not prog.heap.is_heap(fn):
        return None
    try:
        d = prog.values.decode(fn, depth=1)
    except (DecodeError, TargetMemoryError):
        return None
    if d.get("type") == "bound_function":  # setInterval(fn.bind(x)): where fn is
        d = d.get("target") or {}
    if d.get("type") != "function":
        return None
    return {k: d.get(k) for k in ("name", "script", "line", "column", "address")}


def _timers(prog: Program, heap: int, warnings: list[str]) -> list[Timer]:
    v = prog.values
    out: list[Timer] = []
    for kind, cb_key in (("Timeout", "_onTimeout"), ("Immediate", "_onImmediate")):
        found = instances(prog, heap, kind)
        if len(found) > MAX_TIMERS:
            warnings.append(f"{len(found)} {kind} objects: only the first {MAX_TIMERS} are "
                            "described (the counts in resources are node's own)")
        for a in list(found[:MAX_TIMERS]):
            if _is_true(prog, v.own_data_property(a, "_destroyed")):
                continue
            t = Timer(kind, a, _is_true(prog, v.own_data_property(a, symbol_desc="refed")),
                      _callback(prog, v.own_data_property(a, cb_key)))
            if kind == "Timeout":
                t.ms = _number(prog, v.own_data_property(a, "_idleTimeout"))
                if t.ms is not None and t.ms < 0:  # unenrolled
                    continue
                t.start = _number(prog, v.own_data_property(a, "_idleStart"))
                t.repeat = _number(prog, v.own_data_property(a, "_repeat"))
                if t.ms is not None and t.start is not None:
                    t.due = t.start + t.ms
            out.append(t)
    out.sort(key=lambda t: (t.kind != "Timeout", t.due if t.due is not None else 0, t.address))
    return out


def _int32s(prog: Program, arr: int | None, n: int) -> list[int] | None:
    """The first n int32 elements of a typed array (as its VALUE's bytes give them)."""
    if arr is None:
        return None
    try:
        b = bytes.fromhex(prog.values.decode(arr, strlen=n)["bytes"])
    except (DecodeError, TargetMemoryError, KeyError, TypeError, ValueError):
        return None
    if len(b) < 4 * n:
        return None
    return [int.from_bytes(b[4 * i:4 * i + 4], "little", signed=True) for i in range(n)]


def _timer_counts(prog: Program, heap: int) -> tuple[int | None, int | None]:
    """(timeoutInfo[0], immediateInfo[kRefCount]) from node's `timers` binding;
    None for one this node does not keep there (18.0 and 19.0 count Timeouts in JS)."""
    v = prog.values
    k = layouts.node_facts(prog.md.v8_version)["ImmediateRefCount"]
    for g in groups(prog, heap):
        if "immediateInfo" not in g.properties or "toggleImmediateRef" not in g.properties:
            continue
        ti = _int32s(prog, v.own_data_property(g.representative, "timeoutInfo"), 1)
        ii = _int32s(prog, v.own_data_property(g.representative, "immediateInfo"), k + 1)
        if ii is not None:
            return (ti[0] if ti else None, ii[k])
    return (None, None)


# -- all of it --------------------------------------------------------------------------------

def env_handles(prog: Program, heap: int) -> EnvHandles:
    """The resources of the Environment that runs in this heap's isolate."""
    vals = nodedbg.values(prog)
    envs = environments(prog, heap, vals)
    if not envs:
        raise V8DbgError("found no node Environment in the isolate's native contexts: the "
                         "target is not node, stopped before node's bootstrap, or its "
                         "memory is damaged")
    warnings: list[str] = []
    if len(envs) > 1:
        warnings.append(f"{len(envs)} node Environments in this isolate; showing the first "
                        f"(0x{envs[0]:x})")
    env = envs[0]
    handles, requests = _wraps(prog, env, vals, _providers(prog, heap), warnings)
    timers = _timers(prog, heap, warnings)
    n_timeouts, n_immediates = _timer_counts(prog, heap)
    if n_timeouts is None:
        n_timeouts = sum(1 for t in timers if t.kind == "Timeout" and t.refed)
    if n_immediates is None:
        warnings.append("node's immediateInfo was not found: the Immediates counted are "
                        "the ref'd Immediate objects found")
        n_immediates = sum(1 for t in timers if t.kind == "Immediate" and t.refed)
    resources = ([w.type for w in requests if w.counted] + [w.type for w in handles if w.counted]
                 + ["Timeout"] * max(n_timeouts, 0) + ["Immediate"] * max(n_immediates, 0))
    return EnvHandles(env, resources, handles, requests, timers, warnings)
