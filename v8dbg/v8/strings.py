"""JavaScript strings: every representation V8 uses, decoded without recursion.

Cons strings can be hundreds of thousands deep and sliced/thin strings point
into others; we follow them with an explicit work list, stop once `limit`
UTF-16 units are collected, and cap the number of steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DecodeError, TargetMemoryError
from .tagged import Heap

MAX_STEPS = 200000
MAX_LENGTH = (1 << 30)


@dataclass
class JSString:
    text: str
    length: int  # full length in UTF-16 units
    truncated: bool


def _decode_units(raw: bytes, one_byte: bool) -> str:
    if one_byte:
        return raw.decode("latin-1")
    return raw.decode("utf-16-le", "surrogatepass").encode(
        "utf-16-le", "surrogatepass").decode("utf-16-le", "replace") if _has_lone(raw) \
        else raw.decode("utf-16-le")


def _has_lone(raw: bytes) -> bool:
    try:
        raw.decode("utf-16-le")
        return False
    except UnicodeDecodeError:
        return True


class Strings:
    def __init__(self, heap: Heap) -> None:
        self.h = heap
        md = heap.md
        self.rep_mask = md.const("StringRepresentationMask")
        self.enc_mask = md.const("StringEncodingMask")
        self.seq = md.const("SeqStringTag")
        self.cons = md.const("ConsStringTag")
        self.ext = md.const("ExternalStringTag")
        self.sliced = md.const("SlicedStringTag")
        self.thin = md.const("ThinStringTag")
        self.one_byte_tag = md.const("OneByteStringTag")
        self.o_len = md.off("String", "length")
        self.o_chars1 = md.off("SeqOneByteString", "chars")
        self.o_chars2 = md.off("SeqTwoByteString", "chars")
        self.o_first = md.off("ConsString", "first")
        self.o_second = md.off("ConsString", "second")
        self.o_parent = md.off("SlicedString", "parent")
        self.o_offset = md.off("SlicedString", "offset")
        self.o_actual = md.off("ThinString", "actual")
        self.o_resource = md.off("ExternalString", "resource")
        self.o_resource_data = md.off("ExternalString", "resource_data")
        # node's external string resources keep their data pointer here.
        self.o_res_data = md.node.get("offset_ExternalString__data__uintptr_t", 8)

    def is_string(self, obj: int) -> bool:
        try:
            return self.h.is_string_type(self.h.instance_type(obj))
        except (DecodeError, TargetMemoryError):
            return False

    def length(self, obj: int) -> int:
        n = self.h.mem.i32(obj - 1 + self.o_len)
        if n < 0 or n > MAX_LENGTH:
            raise DecodeError(f"string 0x{obj:x} has an implausible length {n}")
        return n

    def read(self, obj: int, limit: int = 4096) -> JSString:
        """Decode up to `limit` UTF-16 units of the string at obj."""
        h = self.h
        total = self.length(obj)
        want = min(total, max(limit, 0))
        if want > 0:
            itype = h.instance_type(obj)
            if itype & self.rep_mask == self.seq and h.is_string_type(itype):
                # (Most strings: their characters in one piece, no work list.)
                return JSString(self._seq(obj, itype, 0, want), total, want < total)
        parts: list[str] = []
        got = 0
        # Work list of (string, start, count, hops): decode `count` units from
        # `start`; hops counts sliced/thin indirections in a row (V8 never chains
        # more than two, so more is a cycle in damaged memory).
        work: list[tuple[int, int, int, int]] = [(obj, 0, want, 0)]
        # A cons node shared in a DAG is met again only after each earlier visit
        # produced text; meeting it again with no new text is a cycle.
        visits: dict[tuple[int, int, int], int] = {}
        steps = 0
        while work and got < want:
            steps += 1
            if steps > MAX_STEPS:
                raise DecodeError(f"string 0x{obj:x} is nested too deeply to decode")
            s, start, count, hops = work.pop()
            if count <= 0:
                continue
            if hops > 4:
                raise DecodeError(f"string 0x{obj:x} has a cycle of sliced/thin strings")
            itype = h.instance_type(s)
            if not h.is_string_type(itype):
                raise DecodeError(f"0x{s:x} inside string 0x{obj:x} is not a string")
            rep = itype & self.rep_mask
            one = (itype & self.enc_mask) == self.one_byte_tag
            slen = self.length(s)
            count = min(count, max(slen - start, 0))
            if count <= 0:
                continue
            if rep == self.seq:
                parts.append(self._seq(s, itype, start, count))
                got += count
            elif rep == self.cons:
                key = (s, start, count)
                seen = visits.get(key, 0) + 1
                if seen > got + 1:
                    raise DecodeError(f"string 0x{obj:x} contains a cycle (at 0x{s:x})")
                visits[key] = seen
                first = h.word(s - 1 + self.o_first)
                second = h.word(s - 1 + self.o_second)
                flen = self.length(first)
                # Push second first so first is decoded first.
                if start + count > flen:
                    s2 = max(start - flen, 0)
                    work.append((second, s2, start + count - max(start, flen), 0))
                if start < flen:
                    work.append((first, start, min(count, flen - start), 0))
            elif rep == self.sliced:
                parent = h.word(s - 1 + self.o_parent)
                off = h.smi(h.word(s - 1 + self.o_offset))
                work.append((parent, off + start, count, hops + 1))
            elif rep == self.thin:
                work.append((h.word(s - 1 + self.o_actual), start, count, hops + 1))
            elif rep == self.ext:
                width = 1 if one else 2
                data = self._external_data(s)
                raw = h.mem.read(data + start * width, count * width)
                parts.append(_decode_units(raw, one))
                got += count
            else:
                raise DecodeError(f"string 0x{s:x} has unknown representation {rep}")
        text = "".join(parts)
        return JSString(text, total, want < total)

    def _seq(self, s: int, itype: int, start: int, count: int) -> str:
        """`count` characters of sequential string s from `start`."""
        one = (itype & self.enc_mask) == self.one_byte_tag
        base = s - 1 + (self.o_chars1 if one else self.o_chars2)
        width = 1 if one else 2
        return _decode_units(self.h.mem.read(base + start * width, count * width), one)

    def _external_data(self, s: int) -> int:
        """Address of an external string's characters.

        V8 caches the data pointer right after the resource pointer for
        uncached-free external strings; otherwise ask node's resource object.
        """
        h = self.h
        resource = h.mem.u64(s - 1 + self.o_resource)
        cached = h.mem.u64(s - 1 + self.o_resource_data)
        if cached and h.mem.readable(cached, 1):
            return cached
        if resource:
            data = h.mem.u64(resource + self.o_res_data)
            if data and h.mem.readable(data, 1):
                return data
        raise DecodeError(f"external string 0x{s:x} has no readable data")

    def text(self, obj: int, limit: int = 4096) -> str:
        return self.read(obj, limit).text
