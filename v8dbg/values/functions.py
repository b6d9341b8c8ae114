"""Functions: names as JavaScript gives them, bound functions, generators,
the variables a closure captures, and a function's source text.
"""

from __future__ import annotations

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from .base import MAX_CHAIN, Value, ValuesBase, _Walk, hexaddr, number_value


class FunctionValues(ValuesBase):
    def function_name(self, fn: int) -> str:
        try:
            return self.f.debug_name(self.f.shared(fn))
        except (DecodeError, TargetMemoryError):
            return ""

    def _function(self, v: int, itype: int, level: int, walk: _Walk) -> Value:
        sfi = self.f.shared(v)
        # `name` is what JavaScript's fn.name gives (and util.inspect shows); the name
        # V8 inferred for an anonymous function (`Module._compile`) comes separately.
        name = self.f.name(sfi)
        out: Value = {"type": "function", "name": name,
                      "script": None, "line": None, "column": None}
        if not name:
            inferred = self.f.inferred_name(sfi)
            if inferred:
                out["inferred_name"] = inferred
        script = self.f.script(sfi)
        if script is not None:
            out["script"] = self.f.script_name(script)
            pos = self.f.start_position(sfi)
            if pos is not None and pos >= 0:
                lc = self.f.position_to_line_col(script, pos)
                out["line"], out["column"] = lc.line, lc.column
        if itype == self._type("JS_CLASS_CONSTRUCTOR_TYPE"):
            out["class"] = True
            span = self.class_positions(v)
            if span is not None and script is not None:
                lc = self.f.position_to_line_col(script, span[0])
                out["line"], out["column"] = lc.line, lc.column
        try:
            proto = self.fld(self.h.map_of(v), "Map", "prototype")
            if self.h.is_heap(proto) and self.h.oddball_name(proto) is None:
                c = self.own_data_property(proto, "constructor")
                if c is not None and self.f.is_function(c):
                    kind = self.function_name(c)
                    if kind in ("AsyncFunction", "GeneratorFunction", "AsyncGeneratorFunction"):
                        out["kind"] = kind
            if out.get("class") and self.h.is_heap(proto) and self.f.is_function(proto):
                parent = self.function_name(proto)
                if parent:
                    out["extends"] = parent
        except (DecodeError, TargetMemoryError):
            pass
        # Own enumerable properties (static class fields, fn.extra = ...), as util shows them.
        if self._has_enumerable(v):
            if level > walk.opts.depth:
                out["truncated"] = True
            else:
                walk.path.add(v)
                try:
                    out["properties"] = self._properties(v, level, walk)
                finally:
                    walk.path.discard(v)
        return out

    def class_positions(self, fn: int) -> tuple[int, int] | None:
        """(start, end) of a class's whole source, kept under a private symbol of the class."""
        cp_type = self._type("CLASS_POSITIONS_TYPE")
        try:
            for p in self.own_properties(fn, 64):
                if p.accessor or not self.h.is_heap(p.value) or not self.is_symbol(p.key):
                    continue
                if self.itype(p.value) == cp_type:
                    a = self.mem.u64(p.value - 1 + self.off("ClassPositions", "start"))
                    b = self.mem.u64(p.value - 1 + self.off("ClassPositions", "end"))
                    if self.h.is_smi(a) and self.h.is_smi(b):
                        return self.h.smi(a), self.h.smi(b)
        except (DecodeError, TargetMemoryError):
            return None
        return None

    def bound_name(self, v: int) -> str:
        """A bound function's JavaScript name: "bound " per level of binding,
        then the target's own name."""
        prefix, name = "bound ", ""
        t = self.fld(v, "JSBoundFunction", "bound_target_function")
        for _ in range(8):
            if self.h.is_heap(t) and self.h.is_type(t, "JS_BOUND_FUNCTION_TYPE"):
                prefix += "bound "
                t = self.fld(t, "JSBoundFunction", "bound_target_function")
                continue
            if self.f.is_function(t):
                try:
                    name = self.f.name(self.f.shared(t))
                except (DecodeError, TargetMemoryError):
                    name = ""
            break
        return prefix + name

    def callable_name(self, fn: int) -> str | None:
        """The name of a function (V8's inferred one for an anonymous function)
        or of a bound function; None for other callables."""
        try:
            if self.f.is_function(fn):
                return self.function_name(fn)
            if self.h.is_type(fn, "JS_BOUND_FUNCTION_TYPE"):
                return self.bound_name(fn)
        except (DecodeError, TargetMemoryError):
            pass
        return None

    def _bound(self, v: int, level: int, walk: _Walk) -> Value:
        target = self.fld(v, "JSBoundFunction", "bound_target_function")
        out: Value = {"type": "bound_function", "name": self.bound_name(v)}
        if level > walk.opts.depth:
            out["truncated"] = True
            return out
        out["target"] = self._child(target, level + 1, walk)
        out["this"] = self._child(self.fld(v, "JSBoundFunction", "bound_this"), level + 1, walk)
        args = self.fld(v, "JSBoundFunction", "bound_arguments")
        items = self.fixed_items(args, walk.opts.strlen) if self.h.is_heap(args) else []
        out["args"] = [self._child(a, level + 1, walk) for a in items]
        return out

    def _generator_state(self, v: int) -> str:
        try:
            c = self.fld(v, "JSGeneratorObject", "continuation")
        except V8DbgError:
            return "unknown"
        if not self.h.is_smi(c):
            return "unknown"
        c = self.h.smi(c)
        return "suspended" if c >= 0 else ("executing" if c == -1 else "closed")

    def closure_variables(self, fn: int, depth: int = 0, strlen: int = 100, max_props: int = 1000,
                          max_scopes: int = MAX_CHAIN) -> list[dict]:
        """Variables of every context enclosing a function, innermost first."""
        from ..v8.scopes import ScopeInfo
        from ..v8.slots import unwrap as unwrap_slot
        h = self.h
        if not self.f.is_function(fn):
            raise DecodeError(f"0x{fn:x} is not a JavaScript function")
        ctx = self.fld(fn, "JSFunction", "context")
        lo = self.md.const("FirstContextType")
        hi = self.md.const("LastContextType")
        native = self._type("NATIVE_CONTEXT_TYPE")
        out: list[dict] = []
        for _ in range(max_scopes):
            if not h.is_heap(ctx):
                break
            t = self.itype(ctx)
            if not lo <= t <= hi or t == native:
                break
            n = self.fixed_length(ctx)
            slots = self.fixed_items(ctx, min(n, 1 << 16))
            if len(slots) < 2:
                break
            si = slots[self.md.const("context_idx_scope_info")]
            if h.is_heap(si) and h.is_type(si, "SCOPE_INFO_TYPE"):
                for local in ScopeInfo(h, self.s, si).context_locals():
                    if 0 <= local.slot < len(slots):
                        raw = unwrap_slot(h, slots[local.slot])
                        val = number_value(raw) if isinstance(raw, float) else \
                            self.decode(raw, depth, strlen, max_props)
                        out.append({"name": local.name, "value": val,
                                    "context": hexaddr(ctx)})
            ctx = slots[self.md.const("context_idx_prev")]
        return out

    def function_source(self, fn: int, limit: int = 1 << 20) -> tuple[str, int, int]:
        """(source text, line, column) of a function's own definition."""
        sfi = self.f.shared(fn)
        script = self.f.script(sfi)
        if script is None:
            raise V8DbgError(f"function 0x{fn:x} ({self.f.debug_name(sfi) or 'anonymous'}) "
                             "has no script (a builtin or native function)")
        start = self.f.start_position(sfi)
        end = self.f.end_position(sfi)
        span = self.class_positions(fn) if self.itype(fn) == self._type(
            "JS_CLASS_CONSTRUCTOR_TYPE") else None
        if span is not None:
            start, end = span
        if start is None or end is None or not 0 <= start <= end:
            raise V8DbgError(f"function 0x{fn:x} has no recorded source range")
        end = min(end, start + limit)
        src = self.f.script_source(script, end + 1)
        if src is None:
            raise V8DbgError(f"the script of function 0x{fn:x} has no source text")
        lc = self.f.position_to_line_col(script, start)
        return src[start:end], lc.line, lc.column
