"""ArrayBuffers, typed arrays, DataViews and node Buffers: lengths and the first bytes.
"""

from __future__ import annotations

from ..errors import DecodeError
from .base import _TYPED_SIZES, Value, ValuesBase, _Walk


class Binary(ValuesBase):
    def _bytes(self, addr: int, n: int, walk: _Walk, unit: int = 1) -> tuple[str, bool]:
        """Hex of the first STRLEN units (bytes, or elements of `unit` bytes)."""
        want = min(n, walk.opts.strlen * unit)
        if want <= 0 or addr == 0:
            return "", n > 0
        return self.mem.read(addr, want).hex(), want < n

    def array_buffer_store(self, v: int) -> tuple[int, int]:
        """(backing store address, byte length) of an ArrayBuffer: where its
        bytes live outside V8's heap, 0 when it has none."""
        n = self.mem.u64(v - 1 + self.off("JSArrayBuffer", "byte_length"))
        store = self.mem.u64(v - 1 + self.off("JSArrayBuffer", "backing_store"))
        if n > 1 << 53:
            raise DecodeError(f"ArrayBuffer 0x{v:x} has an implausible length")
        return store, n

    def _array_buffer(self, v: int, walk: _Walk) -> Value:
        store, n = self.array_buffer_store(v)
        data, cut = self._bytes(store, n, walk)
        out: Value = {"type": "arraybuffer", "byte_length": n, "bytes": data}
        if cut:
            out["truncated"] = True
        bits = self.mem.u32(v - 1 + self.off("JSArrayBuffer", "bit_field"))
        if bits & 4:
            out["detached"] = True
        return out

    def _typed_array(self, v: int, name: str, walk: _Walk) -> Value:
        mem = self.mem
        off = self.mem.u64(v - 1 + self.off("JSArrayBufferView", "byte_offset"))
        blen = mem.u64(v - 1 + self.off("JSArrayBufferView", "byte_length"))
        if off > 1 << 53 or blen > 1 << 53:
            raise DecodeError(f"view 0x{v:x} has an implausible length")
        ctor = self.constructor_name(v)
        if name != "JS_TYPED_ARRAY_TYPE":
            data = mem.u64(v - 1 + self.off("JSDataView", "data_pointer"))
            hexed, cut = self._bytes(data, blen, walk)
            out: Value = {"type": "typedarray", "kind": "DataView", "constructor": ctor,
                          "length": blen, "byte_offset": off, "byte_length": blen, "bytes": hexed}
            if cut:
                out["truncated"] = True
            return out
        kind = self._kinds.get(self.elements_kind(self.h.map_of(v)))
        if kind is None:
            raise DecodeError(f"typed array 0x{v:x} has an unknown elements kind")
        size = _TYPED_SIZES[kind]
        if self.md.has("JSTypedArray", "length"):
            length = mem.u64(v - 1 + self.off("JSTypedArray", "length"))
        else:
            length = blen // size
        if length > 1 << 53:
            raise DecodeError(f"typed array 0x{v:x} has an implausible length")
        base = mem.u64(v - 1 + self.off("JSTypedArray", "base_pointer"))
        ext = mem.u64(v - 1 + self.off("JSTypedArray", "external_pointer"))
        data = (base + ext) & ((1 << 64) - 1) if self.h.is_heap(base) else ext
        hexed, cut = self._bytes(data, length * size, walk, size)
        out = {"type": "typedarray", "kind": f"{kind}Array", "constructor": ctor,
               "length": length, "byte_offset": off, "byte_length": blen, "bytes": hexed}
        if cut:
            out["truncated"] = True
        return out
