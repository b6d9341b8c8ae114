"""Per-version V8 facts that the binary's postmortem metadata lacks.

This is the one place that knows V8 versions. Entries are keyed by
(major, minor); `apply` fills only what the binary did not provide, so the
binary's own metadata always wins. Every value here was checked against
cores of the official node release of that line.
"""

from __future__ import annotations

from typing import Any

# Facts shared by every supported version (x64, no pointer compression).
COMMON: dict[str, Any] = {
    "consts": {
        "ByteArrayDataOffset": 16,
        "off_fp_argc": -24,  # raw intptr, counts the receiver
        "ArgcIncludesReceiver": 1,
        "ParameterCountIncludesReceiver": 1,
        "PositionTableRaw": 1,  # entries hold SourcePosition words
        "PositionTableStart": -1,  # code offset before the first entry (function entry)
        "PositionTableEncoding": 1,  # 1: sign marks expression; 2: V8 14.6 packing
        # An EphemeronHashTable's (key, value) entries: from this offset, 16 bytes each.
        "EphemeronEntriesOffset": 40,
        "ScopeInfoFlagsOffset": 8,
        "ScopeInfoParamsOffset": 16,
        "ScopeInfoLocalsOffset": 24,
        "ScopeInfoVarsOffset": 32,
        "ScopeInfoPositionsFirst": 0,  # 1: start/end sit before the variable part
        "ScopeInfoMaxInlinedLocals": 75,
        "ScopeInfoModuleCountFirst": 1,  # module variable count before the variables
        "CodeInstructionsInline": 0,  # 1: instructions follow the Code header (V8 10)
        # Symbol flags bits of a private symbol (a heap snapshot's `private
        # symbol`): is_private; from 14.6 is_private_name apart, bit 1.
        "SymbolPrivateMask": 1,
        # ... and of a class's private name (`#x`): is_private_name, bit 4
        # (with is_private); from 14.6 bit 1 alone. Seen in cores of 22, 24
        # (0x11) and 26 (0x2).
        "SymbolPrivateNameMask": 0x10,
        "BuiltinExitFrameTargetOffset": 24,  # the JSFunction in a BuiltinExitFrame, from fp
        "ErrorStackFrameSlots": 0,  # >0: an unformatted error stack is a flat list
        "ErrorStackFrameFunction": 2,
        # ... and there a frame's code (a BytecodeWrapper), offset and flags.
        "ErrorStackFrameCode": 0,
        "ErrorStackFrameOffset": 3,
        "ErrorStackFrameFlags": 5,
        # CallSiteInfo flags: the bit that says its offset is already a source
        # position, not a bytecode offset (V8 caches the position there once
        # asked). Bit 7 from 12.4 (is_builtin before it), 6 before.
        "CallSiteInfoPositionComputedBit": 7,
        "JSDateValueIsRaw": 0,  # 1: JSDate keeps a raw float64, not a tagged number
        # A NativeContext is its slots plus raw words after them (the microtask
        # queue pointer): its size is 2 + length + this many words.
        "NativeContextExtraWords": 1,
        # Machine code objects end at a multiple of this (V8's kCodeAlignment, x64).
        "CodeAlignment": 64,
        # Frames, x64 (checked in cores of every line): an exit frame keeps the
        # caller's sp at fp-16, whose word below is the return address into the
        # builtin; an entry frame saves the c_entry_fp of the segment below it.
        "ExitFrameSpOffset": -16,
        "EntryFrameNextExitFp": -64,
        # A handle block holds this many slots (V8's kHandleBlockSize, KB - 2);
        # a HandleScopeData's limit is the end of the block its next lies in.
        "HandleBlockSlots": 1022,
        # HandleScopeImplementer's spare_ (the freed block kept for reuse):
        # after isolate_ and its DetachableVectors (data, capacity, size) of
        # blocks, entered and saved contexts; V8 10.2 and 11.3 have one more
        # (is_microtask_context_), so 104 there (api.h / handle-scope-
        # implementer.h; checked in cores of every line).
        "HandleScopeImplementerSpare": 80,
    },
    "fields": {
        ("Script", "line_offset"): 24,
        ("Script", "column_offset"): 32,
        ("Script", "id"): 64,
        ("InterpreterData", "bytecode_array"): 8,
        ("BytecodeArray", "length"): 8,
        # Objects and values (checked in cores of every supported line).
        ("Map", "used_or_unused_instance_size_in_words"): 10,
        ("JSArray", "length"): 24,
        ("Oddball", "to_string"): 16,
        ("PropertyArray", "length_and_hash"): 8,
        ("AccessorPair", "getter"): 8,
        ("AccessorPair", "setter"): 16,
        ("PropertyCell", "name"): 8,
        ("PropertyCell", "property_details_raw"): 16,
        ("PropertyCell", "value"): 24,
        ("Symbol", "flags"): 12,
        ("BigInt", "bitfield"): 8,
        ("BigInt", "digits"): 16,
        ("JSPrimitiveWrapper", "value"): 24,
        ("JSRegExp", "flags"): 40,
        ("JSPromise", "reactions_or_result"): 24,
        ("JSPromise", "flags"): 32,
        ("JSProxy", "target"): 16,
        ("JSProxy", "handler"): 24,
        # A JSMessageObject: its template's argument (the thrown value, for an
        # uncaught exception) right after the message type the metadata names.
        ("JSMessageObject", "argument"): 32,
        # An AllocationSite: an object literal's boilerplate (or a Smi of
        # transition info), then the site of the literal's nested object.
        ("AllocationSite", "transition_info_or_boilerplate"): 8,
        ("AllocationSite", "nested_site"): 16,
        ("JSBoundFunction", "bound_target_function"): 24,
        ("JSBoundFunction", "bound_this"): 32,
        ("JSBoundFunction", "bound_arguments"): 40,
        ("JSCollection", "table"): 24,
        ("JSWeakCollection", "table"): 24,
        # Slots the GC treats as weak though they hold strong pointers: a
        # WeakRef's target, a WeakCell's target and unregister token.
        ("JSWeakRef", "target"): 24,
        ("WeakCell", "target"): 16,
        ("WeakCell", "unregister_token"): 24,
        ("JSGeneratorObject", "function"): 24,
        ("JSGeneratorObject", "context"): 32,
        ("JSGeneratorObject", "receiver"): 40,
        ("JSGeneratorObject", "continuation"): 64,
        ("JSArrayBufferView", "buffer"): 24,
        ("JSArrayBufferView", "bit_field"): 48,
        ("JSDataView", "data_pointer"): 56,
        # CallSiteInfo, V8 10.2-11.3: receiver, function, code object, then
        # code_offset_or_source_position and flags (Smis). From 12.4 the code
        # object comes first and the function moves (see below).
        ("CallSiteInfo", "function"): 16,
        ("CallSiteInfo", "code_object"): 24,
        ("CallSiteInfo", "code_offset_or_source_position"): 32,
        ("CallSiteInfo", "flags"): 40,
        ("DescriptorArray", "number_of_all_descriptors"): 8,  # u16
        ("PropertyArray", "data"): 16,
        ("FixedDoubleArray", "data"): 16,
        ("SloppyArgumentsElements", "arguments"): 24,
        ("ClassPositions", "start"): 8,
        ("ClassPositions", "end"): 16,
        ("ExternalString", "resource_data"): 24,  # V8's cached character pointer
    },
}

# Typed-array elements kinds, in each line's numbering (Map bit_field2).
_TYPED_KINDS_OLD = ("Uint8", "Int8", "Uint16", "Int16", "Uint32", "Int32", "Float32",
                    "Float64", "Uint8Clamped", "BigUint64", "BigInt64")
_TYPED_KINDS_NEW = ("Uint8", "Int8", "Uint16", "Int16", "Uint32", "Int32", "BigUint64",
                    "BigInt64", "Uint8Clamped", "Float32", "Float64", "Float16")


def _typed_kinds(order: tuple[str, ...], first: int) -> dict[str, int]:
    return {f"ElementsKind{name}Array": first + i for i, name in enumerate(order)}


def _types(**numbers: int) -> dict[str, int]:
    """Instance types the metadata lacks, as `type_NAME` constants."""
    return {f"type_{name}": value for name, value in numbers.items()}


# Instance types the metadata lacks but that sit at a fixed distance from
# one it has, in every line 10.1-14.6 (checked in cores): (anchor, delta).
# The anchor is a type name, or a constant in the binary's metadata.
_DERIVED_TYPES: dict[str, tuple[str, int]] = {
    # Hash tables follow FixedArray: Ephemeron, Global, Name, (NameToIndex), Number, OrderedHash.
    "EPHEMERON_HASH_TABLE_TYPE": ("FIXED_ARRAY_TYPE", 2),
    "GLOBAL_DICTIONARY_TYPE": ("FIXED_ARRAY_TYPE", 3),
    "NAME_DICTIONARY_TYPE": ("FIXED_ARRAY_TYPE", 4),
    "NUMBER_DICTIONARY_TYPE": ("FIXED_ARRAY_TYPE", 6),
    "ORDERED_HASH_MAP_TYPE": ("FIXED_ARRAY_TYPE", 7),
    "ORDERED_HASH_SET_TYPE": ("FIXED_ARRAY_TYPE", 8),
    # JSGeneratorObject comes just before its subclasses.
    "JS_GENERATOR_OBJECT_TYPE": ("JS_ASYNC_FUNCTION_OBJECT_TYPE", -1),
    # The last of the JSFunction types, and the 8th of the 10 context types.
    "JS_CLASS_CONSTRUCTOR_TYPE": ("LastJSFunctionType", 0),
    # The ten context types, in V8's (alphabetical) order; where the binary
    # keeps its own names (typenames.py) those come first.
    **{f"{kind}_CONTEXT_TYPE": ("FirstContextType", i) for i, kind in enumerate(
        ("AWAIT", "BLOCK", "CATCH", "DEBUG_EVALUATE", "EVAL", "FUNCTION", "MODULE", "NATIVE",
         "SCRIPT", "WITH"))},
    "FREE_SPACE_TYPE": ("FEEDBACK_VECTOR_TYPE", 2),
    # Objects of API templates: V8's own type-name switch covers them by a range
    # check ("[api object] N"), not by name; the metadata gives the number.
    "JS_API_OBJECT_TYPE": ("APIObjectType", 0),
    "JS_SPECIAL_API_OBJECT_TYPE": ("SpecialAPIObjectType", 0),
}


# From V8 12.4 code metadata sits in trusted space; the SFI's function data
# has no metadata symbol.
_CODE_12 = {
    ("SharedFunctionInfo", "function_data"): 8,
    ("BytecodeArray", "source_position_table"): 24,
    ("BytecodeArray", "constant_pool"): 40,
    ("Code", "deoptimization_data"): 8,
    ("Code", "source_position_table"): 16,
    # An InstructionStream (in code space) keeps its own body size (u32)
    # after its header's code and relocation info (checked in cores of 22,
    # 24 and 26: header and body to CodeAlignment end where the next starts).
    ("InstructionStream", "body_size"): 24,
}
# From V8 12.9 the SFI keeps its function data in two slots: trusted data
# (bytecode, code, uncompiled data; Smi 0 when unused) at +8 and untrusted
# data (builtin id, FunctionTemplateInfo, asm.js data; Smi -1 when unused) at
# +16. Checked in cores of 23, 24, 25 and 26: bytecode, code and uncompiled
# data only ever at +8, builtin ids and API templates only at +16.
_SFI_DATA_13 = {("SharedFunctionInfo", "untrusted_function_data"): 16,
                # A JSFunction's code is an entry of the JS dispatch table
                # (v8/dispatch.py): its 32-bit handle here.
                ("JSFunction", "dispatch_handle"): 24}
# The handle is the entry's index shifted left by this; an entry's second
# word the Code's address shifted left by JSDispatchCodeShift (checked in
# cores of 24 and 26: every sampled function's entry holds its parameter
# count).
_DISPATCH_13 = {"JSDispatchHandleShift": 8, "JSDispatchCodeShift": 16}
# From V8 13.6 a ScopeInfo keeps its start/end positions before the variable part.
# Its heap snapshot sizes objects by SizeForSnapshot: read-only ones 0, an
# external string with its characters (checked against V8's files of node
# 24 and 26 cores; node 22's writes heap bytes alone).
# It names oddballs as they print (`undefined`, not `system / Oddball`).
_SCOPE_INFO_13 = {"ScopeInfoVarsOffset": 48, "ScopeInfoPositionsFirst": 1,
                  "SnapshotSizeForSnapshot": 1, "SnapshotOddballNames": 1}

VERSIONS: dict[tuple[int, int], dict[str, Any]] = {
    (10, 2): {"consts": {
        "DeoptimizationDataInlinedFunctionCountIndex": 1,
        "DeoptimizationDataLiteralArrayIndex": 2,
        "DeoptimizationDataInliningPositionsIndex": 7,
        "CodeKindBaseline": 11,
        "CodeInstructionsInline": 1,  # instructions follow the Code header
    }, "fields": {
        ("BytecodeArray", "source_position_table"): 32,
        ("BytecodeArray", "constant_pool"): 16,
        ("BytecodeArray", "parameter_size"): 44,
        ("Code", "deoptimization_data"): 16,
        ("Code", "source_position_table"): 24,
        # A Code's size: its header, then instruction_size and metadata_size
        # bytes (u32 each), up to CodeAlignment.
        ("Code", "metadata_size"): 44,
    }},
    (11, 3): {"consts": {}, "fields": {
        ("BytecodeArray", "source_position_table"): 32,
        ("BytecodeArray", "constant_pool"): 16,
        ("BytecodeArray", "parameter_size"): 44,
        ("JSFunction", "code"): 48,
        ("Code", "flags"): 48,
        ("Code", "instruction_start"): 40,
        ("Code", "instruction_size"): 56,
        # An InstructionStream (header, then the body) holds no size of its
        # own: its Code's instruction_size and metadata_size give the body's.
        ("Code", "metadata_size"): 60,
    }},
    (12, 4): {"consts": {}, "fields": {
        **_CODE_12, ("BytecodeArray", "parameter_size"): 52,
    }},
    (13, 6): {"consts": {**_SCOPE_INFO_13, **_DISPATCH_13},
              "fields": {**_CODE_12, **_SFI_DATA_13}},
    (14, 6): {"consts": {
        **_SCOPE_INFO_13, **_DISPATCH_13,
        # (Checked against V8's file of a node 26 core: the symbols with
        # flags 0x1, 0x2 or 0x3 are its 189 private symbols.)
        "SymbolPrivateMask": 3,
        "SymbolPrivateNameMask": 2,
        "PositionTableEncoding": 2,
    }, "fields": {**_CODE_12, **_SFI_DATA_13}},
}

# Object and value facts per line: typed-array kinds, instance types the
# metadata lacks, and fields that moved. Merged into VERSIONS below.
_HASH_TABLES_OLD = dict(EPHEMERON_HASH_TABLE_TYPE=181, GLOBAL_DICTIONARY_TYPE=182,
                        NAME_DICTIONARY_TYPE=183, NUMBER_DICTIONARY_TYPE=185,
                        ORDERED_HASH_MAP_TYPE=186, ORDERED_HASH_SET_TYPE=187)
_HASH_TABLES_13 = dict(EPHEMERON_HASH_TABLE_TYPE=207, GLOBAL_DICTIONARY_TYPE=208,
                       NAME_DICTIONARY_TYPE=209, NUMBER_DICTIONARY_TYPE=211,
                       ORDERED_HASH_MAP_TYPE=212, ORDERED_HASH_SET_TYPE=213)
# An API template's class name (FunctionTemplate::SetClassName), which names
# an object whose map's constructor is that FunctionTemplateInfo. Before 12.4
# one more Smi and a CallHandlerInfo come first (checked in cores).
_TEMPLATE_OLD = {("FunctionTemplateInfo", "class_name"): 56}
_TEMPLATE_12 = {("FunctionTemplateInfo", "class_name"): 40}
_VALUES: dict[tuple[int, int], dict[str, Any]] = {
    (10, 2): {"consts": {
        "CallSiteInfoPositionComputedBit": 6,
        "HandleScopeImplementerSpare": 104,
        "ScopeTypeModule": 3,  # ScopeInfo flags bits 0..3
        "ScopeInfoModuleCountFirst": 0,  # the module variable count is near the end
        **_typed_kinds(_TYPED_KINDS_OLD, 17),
        **_types(BIG_INT_BASE_TYPE=129, JS_GENERATOR_OBJECT_TYPE=2096, NATIVE_CONTEXT_TYPE=214,
                 JS_CLASS_CONSTRUCTOR_TYPE=2080, **_HASH_TABLES_OLD),
        "FirstJSFunctionType": 2065, "LastJSFunctionType": 2080,
    }, "fields": {("JSArrayBuffer", "bit_field"): 56, **_TEMPLATE_OLD}},
    (11, 3): {"consts": {
        "CallSiteInfoPositionComputedBit": 6,
        "HandleScopeImplementerSpare": 104,
        "ScopeTypeModule": 3,  # ScopeInfo flags bits 0..3
        "ScopeInfoModuleCountFirst": 0,  # the module variable count is near the end
        **_typed_kinds(_TYPED_KINDS_OLD, 18),
        **_types(BIG_INT_BASE_TYPE=129, JS_GENERATOR_OBJECT_TYPE=2105, NATIVE_CONTEXT_TYPE=212,
                 JS_CLASS_CONSTRUCTOR_TYPE=2081, EPHEMERON_HASH_TABLE_TYPE=177,
                 GLOBAL_DICTIONARY_TYPE=178, NAME_DICTIONARY_TYPE=179, NUMBER_DICTIONARY_TYPE=181,
                 ORDERED_HASH_MAP_TYPE=182, ORDERED_HASH_SET_TYPE=183),
        "FirstJSFunctionType": 2066, "LastJSFunctionType": 2081,
    }, "fields": {("JSArrayBuffer", "bit_field"): 64, **_TEMPLATE_OLD}},
    (12, 4): {"consts": {
        "ScopeTypeModule": 3,  # ScopeInfo flags bits 0..3
        **_typed_kinds(_TYPED_KINDS_OLD, 18),
        **_types(BIG_INT_BASE_TYPE=129, JS_GENERATOR_OBJECT_TYPE=2107, NATIVE_CONTEXT_TYPE=197,
                 JS_CLASS_CONSTRUCTOR_TYPE=2082, EPHEMERON_HASH_TABLE_TYPE=176,
                 GLOBAL_DICTIONARY_TYPE=177, NAME_DICTIONARY_TYPE=178, NUMBER_DICTIONARY_TYPE=180,
                 ORDERED_HASH_MAP_TYPE=181, ORDERED_HASH_SET_TYPE=182),
    }, "fields": {("JSArrayBuffer", "bit_field"): 64, ("CallSiteInfo", "function"): 24,
                  ("CallSiteInfo", "code_object"): 8, **_TEMPLATE_12}},
    (13, 6): {"consts": {
        "ScopeTypeModule": 5,  # ScopeInfo flags bits 0..3
        **_typed_kinds(_TYPED_KINDS_NEW, 18),
        **_types(BIG_INT_BASE_TYPE=129, JS_GENERATOR_OBJECT_TYPE=2109, NATIVE_CONTEXT_TYPE=227,
                 JS_CLASS_CONSTRUCTOR_TYPE=2081, **_HASH_TABLES_13),
        "JSDateValueIsRaw": 1,  # a raw float64, not a tagged number
    }, "fields": {
        ("CallSiteInfo", "function"): 24,
        ("CallSiteInfo", "code_object"): 8,
        ("JSArrayBuffer", "bit_field"): 72,
        ("JSArrayBufferView", "buffer"): 32,
        ("JSArrayBufferView", "bit_field"): 40,
        ("JSDataView", "data_pointer"): 64,
        **_TEMPLATE_12,
    }},
    (14, 6): {"consts": {
        "ScopeTypeModule": 5,  # ScopeInfo flags bits 0..3
        **_typed_kinds(_TYPED_KINDS_NEW, 18),
        **_types(BIG_INT_BASE_TYPE=129, JS_GENERATOR_OBJECT_TYPE=2111, NATIVE_CONTEXT_TYPE=228,
                 JS_CLASS_CONSTRUCTOR_TYPE=2082, HOLE_TYPE=274, **_HASH_TABLES_13),
        "JSDateValueIsRaw": 1,
        # An unformatted error stack is a flat list: 6 slots per frame, function 3rd.
        "ErrorStackFrameSlots": 6,
        "ErrorStackFrameFunction": 2,
        # A mutable `let` number may live in a ContextCell in its context slot:
        # the tagged value at +8, a state word at +24 and, in the int32 and
        # float64 states, the raw number at +32 (checked in cores).
        "ContextCellValue": 8, "ContextCellState": 24, "ContextCellRaw": 32,
        "ContextCellStateInt32": 2, "ContextCellStateFloat64": 3,
    }, "fields": {
        # WeakCell: holdings moved before the target (checked against V8's own
        # heap snapshot of a node 26.10.0 core: target the observed object).
        ("WeakCell", "target"): 24,
        ("WeakCell", "unregister_token"): 32,
        # Only node 26.0-26.5 keep CallSiteInfo objects in an unformatted stack.
        ("CallSiteInfo", "function"): 24,
        ("CallSiteInfo", "code_object"): 8,
        ("JSArrayBuffer", "bit_field"): 72,
        ("JSArrayBufferView", "buffer"): 32,
        ("JSArrayBufferView", "bit_field"): 40,
        ("JSDataView", "data_pointer"): 64,
        **_TEMPLATE_12,
    }},
}
for _key, _extra in _VALUES.items():
    for _part in ("consts", "fields"):
        for _name, _value in _extra[_part].items():
            VERSIONS[_key][_part].setdefault(_name, _value)

# Heap pages (MemoryChunk), for the heap census. Offsets are into the page
# header itself (PageMetadataPointer 0) or, from V8 13.6, into the metadata
# object that the word at PageMetadataPointer points to. Pages are
# PageAlignment-aligned; flag bits: 8 from-space, 16 to-space. PageListNext/
# Prev link a space's pages (to metadata objects from 13.6). Checked in cores.
_PAGE_INLINE_OLD = dict(PageMetadataPointer=0, PageFlags=8, PageHeap=16, PageAreaStart=24,
                        PageAreaEnd=32, PageOwner=64)
_PAGE_META = dict(PageMetadataPointer=8, PageFlags=0, PageHeap=64, PageAreaStart=72,
                  PageAreaEnd=56, PageOwner=80, PageListNext=264, PageListPrev=272,
                  PageMetadataChunk=8)  # the metadata's link back to its page
#
# Sweeping. After a full GC, V8 sweeps old-generation pages lazily (and on
# other threads): until then a page still holds its dead objects intact, and
# only the marking bitmap tells the live ones. PageSweepingState is the
# page's sweeping state word (0 = swept; PageSweepPending = waiting to be
# swept; other values = being swept or to be iterated), PageMarkingBitmap
# the bitmap (one bit per 8-byte word from the chunk start; a live object's
# first bit is set; PageMarkBits bits per live object). The sweeper clears a
# page's bitmap when it is done with it. PageFreedFlags are the page-flag
# bits of a page already given back but still mapped (pre-freed or
# unregistered), whose stale objects must not be walked; from 14.6 those
# bits are in the metadata's own 32-bit flags at PageMetaFlags. Found in the
# machine code of each binary and checked in cores.
_HEAP_PAGES: dict[tuple[int, int], dict[str, int]] = {
    (10, 2): dict(_PAGE_INLINE_OLD, PageListNext=232, PageListPrev=240,
                  PageSweepingState=0xc0, PageMarkingBitmap=0x128, PageMarkBits=2,
                  PageFreedFlags=0x2000 | 0x80000),
    (11, 3): dict(_PAGE_INLINE_OLD, PageListNext=264, PageListPrev=272,
                  PageSweepingState=0xe0, PageMarkingBitmap=0x140, PageMarkBits=2,
                  PageFreedFlags=0x4000 | 0x80000),
    (12, 4): dict(PageMetadataPointer=0, PageFlags=0, PageHeap=24, PageAreaStart=32,
                  PageAreaEnd=40, PageOwner=72, PageListNext=264, PageListPrev=272,
                  PageSweepingState=0xf0, PageMarkingBitmap=0x140, PageMarkBits=1,
                  PageFreedFlags=0x2000 | 0x10000),
    # FREE_SPACE_TYPE (always FEEDBACK_VECTOR_TYPE + 2) is missing from 13.6/14.6's
    # metadata, and from 13.6 a FreeSpace's size Smi counts words, not bytes.
    (13, 6): dict(_PAGE_META, type_FREE_SPACE_TYPE=268, FreeSpaceSizeInWords=1,
                  PageSweepingState=0xf0, PageMarkingBitmap=0x140, PageMarkBits=1,
                  PageFreedFlags=0x10000 | 0x80000),
    (14, 6): dict(_PAGE_META, type_FREE_SPACE_TYPE=273, FreeSpaceSizeInWords=1,
                  PageListNext=256, PageListPrev=264,
                  PageSweepingState=0xf8, PageMarkingBitmap=0x140, PageMarkBits=1,
                  PageFreedFlags=0, PageMetaFlags=0x58, PageMetaFreedFlags=0x4 | 0x2),
}
for _key, _extra in _HEAP_PAGES.items():
    for _name, _value in dict(_extra, PageAlignment=1 << 18, PageFromFlag=8,
                              PageToFlag=16, PageSweepPending=1, PageMetaFlags=-1,
                              PageMetaFreedFlags=0).items():
        VERSIONS[_key]["consts"].setdefault(_name, _value)

# Optimized frames are read from the code's deoptimization data, as V8's
# OptimizedFrame::Summarize does. What the metadata lacks, per line:
# - DeoptimizationData: the index of its first deopt entry; each entry is
#   (bytecode offset, translation index, pc), 3 Smis.
# - The safepoint table at the code's metadata start: its header size and the
#   offset of its entry count (a 32-bit stack-slot count leads the header from
#   V8 13.6 on), for TurboFan and for Maglev code. Entries hold the pc, then
#   (with deopt data) the deopt index + 1 and the trampoline pc + 1, whose
#   sizes come from the header's configuration word.
# - Which slots are tagged at each entry (safepoints.py, for the stack roots):
#   the bitmap bytes per entry sit in the configuration word from bit 10 on;
#   the frame's slot count leads the table from 13.6 on (offset 0), and
#   before that is in the Code's flags from bit 5 on (kind 4 bits, is
#   turbofanned 1 bit, then 24 bits of stack slots). Maglev tables count
#   the tagged spill slots in their header (after the configuration word),
#   then, before 13.6, the untagged ones; from 13.6 the slot count leads
#   (the untagged ones are the rest). Checked against
#   `--print-opt-code` of the same code on each pinned line (slot count and
#   every entry's bitmap).
# - Translations: how opcodes are encoded (1: every value a signed VLQ, the
#   opcode too; 2: one opcode byte, bytes past the last opcode a short
#   MATCH_PREVIOUS_TRANSLATION), the operand count of each opcode in the line's
#   numbering (V8's own `counts[]` table, found in each binary), and which
#   opcodes begin a translation, describe a JS frame (interpreted, or a JS
#   builtin continuation), or repeat the basis translation.
# Checked by decoding every translation of the optimized code on the stack in
# cores of each line (TurboFan on all, Maglev on 13.6 and 14.6). The Maglev
# headers of 10.2-12.4 were not seen in a core: those nodes run no Maglev code
# by default; they follow V8's source of the 11 era (no stack-slot word).
_DEOPT_ENTRIES = {(10, 2): 11, (11, 3): 11, (12, 4): 11, (13, 6): 12, (14, 6): 12}
_OLD_SLOTS = dict(SafepointTaggedBytesShift=10, SafepointStackSlotsOffset=-1, CodeStackSlotsShift=5,
                  MaglevSafepointTaggedOffset=8, MaglevSafepointUntaggedOffset=12)
_NEW_SLOTS = dict(SafepointTaggedBytesShift=10, SafepointStackSlotsOffset=0, CodeStackSlotsShift=-1,
                  MaglevSafepointTaggedOffset=12, MaglevSafepointUntaggedOffset=-1)
_SAFEPOINTS = {
    (10, 2): dict(SafepointHeaderSize=8, SafepointLengthOffset=0,
                  MaglevSafepointHeaderSize=16, MaglevSafepointLengthOffset=0, **_OLD_SLOTS),
    (11, 3): dict(SafepointHeaderSize=8, SafepointLengthOffset=0,
                  MaglevSafepointHeaderSize=16, MaglevSafepointLengthOffset=0, **_OLD_SLOTS),
    (12, 4): dict(SafepointHeaderSize=8, SafepointLengthOffset=0,
                  MaglevSafepointHeaderSize=16, MaglevSafepointLengthOffset=0, **_OLD_SLOTS),
    (13, 6): dict(SafepointHeaderSize=12, SafepointLengthOffset=4,
                  MaglevSafepointHeaderSize=16, MaglevSafepointLengthOffset=4, **_NEW_SLOTS),
    (14, 6): dict(SafepointHeaderSize=12, SafepointLengthOffset=4,
                  MaglevSafepointHeaderSize=16, MaglevSafepointLengthOffset=4, **_NEW_SLOTS),
}
for _key, _first in _DEOPT_ENTRIES.items():
    VERSIONS[_key]["consts"].setdefault("DeoptimizationDataFirstEntryIndex", _first)
    VERSIONS[_key]["consts"].setdefault("DeoptimizationDataEntrySize", 3)
    VERSIONS[_key]["consts"].setdefault("DeoptimizationDataTranslationIndex", 0)
    for _name, _value in _SAFEPOINTS[_key].items():
        VERSIONS[_key]["consts"].setdefault(_name, _value)
# From V8 13.6 the literal ids of frames index the protected literal array.
VERSIONS[(13, 6)]["consts"].setdefault("DeoptimizationDataProtectedLiteralArrayIndex", 2)
VERSIONS[(14, 6)]["consts"].setdefault("DeoptimizationDataProtectedLiteralArrayIndex", 2)

_COUNTS_12 = (5, 3, 3, 3, 2, 1, 3, 4, 3, 2, 1, 0, 3, 3) + (1,) * 18 + (0, 1, 1, 1, 1, 1, 2, 1)
_COUNTS_13 = (6, 4, 3, 3, 2, 1, 3, 4, 3, 3, 3, 1, 0, 0, 3, 3, 1, 1, 1, 0) + (1,) * 17 \
    + (0, 1, 1, 1, 1, 1, 2, 1)
TRANSLATIONS: dict[tuple[int, int], dict[str, Any]] = {
    (10, 2): {"encoding": 1, "lookback": False,
              "counts": (2, 1, 0, 3, 1, 1, 3, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 3, 3, 4,
                         1, 1, 1, 1, 1, 2),
              "begin": (3,), "interpreted": (18,), "builtin": (19, 20), "match": None},
    (11, 3): {"encoding": 2, "lookback": True,
              "counts": (1, 0, 3, 3, 1, 1, 3, 1, 3, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1,
                         5, 3, 3, 3, 4, 0, 1, 1, 1, 1, 1, 2, 1),
              "begin": (2, 3), "interpreted": (23, 24), "builtin": (25, 26), "match": 35},
    (12, 4): {"encoding": 2, "lookback": True, "counts": _COUNTS_12,
              "begin": (12, 13), "interpreted": (0, 1), "builtin": (2, 3), "match": 39},
    # From 13.6 an interpreted frame also names its BytecodeArray (3rd operand).
    (13, 6): {"encoding": 2, "lookback": True, "counts": _COUNTS_13, "bytecode_literal": True,
              "begin": (14, 15), "interpreted": (0, 1), "builtin": (2, 3), "match": 44},
    (14, 6): {"encoding": 2, "lookback": True, "counts": _COUNTS_13, "bytecode_literal": True,
              "begin": (14, 15), "interpreted": (0, 1), "builtin": (2, 3), "match": 44},
}


def translations(md: Any) -> dict[str, Any]:
    """The translation format of the binary's V8 line (the nearest older one if unknown)."""
    key = (md.v8_version[0], md.v8_version[1])
    if key not in TRANSLATIONS:
        older = [k for k in sorted(TRANSLATIONS) if k <= key]
        key = older[-1] if older else min(TRANSLATIONS)
    return TRANSLATIONS[key]


# Lines between the ones above (odd node lines, and node 18.0-18.2 on V8 10.1),
# each as the nearest line whose facts it shares plus what differs. Found in
# cores of the first, a middle and the last release of each line; the page
# offsets in cores of census_sweep.js (the one word that is 1 on the unswept
# pages, the bitmap whose bits all fall on object maps, the links that point
# at other pages).
_BETWEEN: dict[tuple[int, int], tuple[tuple[int, int], dict[str, int], dict[tuple[str, str], int]]] = {
    (10, 1): ((10, 2), dict(PageSweepingState=0xc8, PageMarkingBitmap=0x130,
                            PageListNext=240, PageListPrev=248), {}),
    (10, 7): ((10, 2), {**_typed_kinds(_TYPED_KINDS_OLD, 18), "PageMarkingBitmap": 0x118}, {}),
    (10, 8): ((10, 2), {**_typed_kinds(_TYPED_KINDS_OLD, 18), "PageMarkingBitmap": 0x120}, {}),
    # Code moved its instructions out (as 11.3) but to other offsets, and
    # JSFunction::code moved to the front.
    (11, 8): ((11, 3), dict(PageSweepingState=0xd8, PageMarkingBitmap=0x128,
                            PageListNext=240, PageListPrev=248), {
        ("JSFunction", "code"): 24,
        ("Code", "instruction_start"): 32,
        ("Code", "flags"): 40,
        ("Code", "instruction_size"): 44,
    }),
    # Objects and page metadata as 13.6 (a FreeSpace still counts bytes),
    # typed-array kinds still in the old order.
    (12, 9): ((13, 6), {**_typed_kinds(_TYPED_KINDS_OLD, 18), "FreeSpaceSizeInWords": 0,
                        "PageSweepingState": 0x100, "PageMarkingBitmap": 0x150,
                        "PageListNext": 280, "PageListPrev": 288}, {}),
    # Objects as 13.6, source positions already packed as in 14.6.
    (14, 1): ((13, 6), {**_types(HOLE_TYPE=272), "PositionTableEncoding": 2,
                        "PageSweepingState": 0xf8, "PageMarkingBitmap": 0x150,
                        "PageListNext": 272, "PageListPrev": 280}, {}),
}
for _key, (_base, _consts, _fields) in _BETWEEN.items():
    VERSIONS[_key] = {
        "consts": {n: v for n, v in VERSIONS[_base]["consts"].items()
                   if not (n.startswith("type_") and n[5:] in _DERIVED_TYPES)} | _consts,
        "fields": dict(VERSIONS[_base]["fields"]) | _fields,
    }
# 12.9 keeps a JSFunction's Code in its own `code` slot (its metadata names
# it): no JS dispatch table before 13.6.
VERSIONS[(12, 9)]["fields"].pop(("JSFunction", "dispatch_handle"))


# V8's per-thread state, found from a Heap (both are members of the Isolate):
# IsolateHeap is the offset of Isolate::heap_, IsolateThreadLocalTop that of the
# ThreadLocalTop (inside IsolateData from 11.3); Top* are offsets inside the
# ThreadLocalTop of isolate_ (a pointer back to the Isolate, which checks
# the other two), c_entry_fp_ (the innermost exit frame's fp), handler_ and
# js_entry_sp_ (the outermost entry frame's fp); TopException is the exception
# V8 is unwinding with (the hole when none), TopPendingMessage the message
# object made for it, TopScheduledException (before 12.4) one an API call left
# for its caller to rethrow.
#
# Node patches V8 within a release line, and some patches moved Isolate
# members: the offsets differ between releases of one V8 version, even of one
# full V8 version (18.15 and 18.20 both run 10.2.154.26). Node marks each
# patch in V8's embedder string ("-node.N", N growing along a line), so the
# facts below are keyed, within a line, by (build, patch, N) of the release
# they were measured in; a release takes the last entry at or before its own
# key (the first if it is older than all). The other entries of its line
# stay candidates (see `thread_top_variants`), each checked by its pointer
# back to the Isolate before the fallback search. Measured in cores of the
# first, a middle and the last release of every line 18-26 (test_sweep.py).
_TOP_OLD = dict(TopIsolate=8, TopCEntryFp=120, TopHandler=128, TopJsEntrySp=152,
                TopException=32, TopPendingMessage=96, TopScheduledException=112)
_TOP_NEW = dict(TopIsolate=96, TopCEntryFp=0, TopHandler=136, TopJsEntrySp=152,
                TopException=40, TopPendingMessage=128)
_THREAD_TOP: dict[tuple[int, int], list[tuple[tuple[int, int, int], dict[str, int]]]] = {
    (10, 1): [((124, 8, 13), dict(_TOP_OLD, TopJsEntrySp=160, IsolateHeap=50680,
                                  IsolateThreadLocalTop=17512))],  # 18.0.0
    (10, 2): [((154, 26, 25), dict(_TOP_OLD, IsolateHeap=50728,
                                   IsolateThreadLocalTop=17584)),  # 18.15.0
              ((154, 26, 39), dict(_TOP_OLD, IsolateHeap=50744,
                                   IsolateThreadLocalTop=17600))],  # 18.20.8
    (10, 7): [((193, 13, 16), dict(_TOP_OLD, IsolateHeap=52416,
                                   IsolateThreadLocalTop=18064))],  # 19.0.0
    (10, 8): [((168, 25, 11), dict(_TOP_OLD, IsolateHeap=52760,
                                   IsolateThreadLocalTop=18312))],  # 19.5.0, 19.8.1
    (11, 3): [((244, 4, 3), dict(_TOP_OLD, IsolateHeap=53944,
                                 IsolateThreadLocalTop=264)),  # 20.0.0
              ((244, 8, 20), dict(_TOP_OLD, IsolateHeap=53952,
                                  IsolateThreadLocalTop=264))],  # 20.13.0, 20.20.2
    (11, 8): [((172, 13, 12), dict(_TOP_OLD, IsolateHeap=55432,
                                   IsolateThreadLocalTop=272))],  # 21.0.0-21.7.3
    (12, 4): [((254, 14, 10), dict(_TOP_NEW, IsolateHeap=56944,
                                   IsolateThreadLocalTop=272)),  # 22.0.0
              ((254, 21, 24), dict(_TOP_NEW, IsolateHeap=56976,
                                   IsolateThreadLocalTop=272)),  # 22.15.0
              ((254, 21, 57), dict(_TOP_NEW, IsolateHeap=56992,
                                   IsolateThreadLocalTop=272))],  # 22.23.3
    (12, 9): [((202, 26, 10), dict(_TOP_NEW, IsolateHeap=57912,
                                   IsolateThreadLocalTop=272))],  # 23.0.0-23.11.1
    (13, 6): [((233, 8, 10), dict(_TOP_NEW, IsolateHeap=61424,
                                  IsolateThreadLocalTop=320)),  # 24.0.0, 24.11.0
              ((233, 17, 53), dict(_TOP_NEW, IsolateHeap=61432,
                                   IsolateThreadLocalTop=320))],  # 24.21.0
    (14, 1): [((146, 11, 10), dict(_TOP_NEW, IsolateHeap=55464,
                                   IsolateThreadLocalTop=328))],  # 25.0.0-25.9.0
    (14, 6): [((202, 33, 19), dict(_TOP_NEW, IsolateHeap=62408,
                                   IsolateThreadLocalTop=328)),  # 26.0.0
              ((202, 34, 24), dict(_TOP_NEW, IsolateHeap=62400,
                                   IsolateThreadLocalTop=328))],  # 26.5.1, 26.10.0
}


def _release_key(md: Any) -> tuple[int, int, int]:
    return (md.v8_version[2], md.v8_version[3], md.consts.get("V8EmbedderNumber", 0))


def thread_top_variants(md: Any) -> list[dict[str, int]]:
    """The thread-state offsets of the binary's line, the release's own first
    (the last measured at or before it), then the line's others, newest first."""
    key = (md.v8_version[0], md.v8_version[1])
    line = _THREAD_TOP.get(key)
    if line is None:
        older = [k for k in sorted(_THREAD_TOP) if k <= key]
        return [_THREAD_TOP[older[-1] if older else min(_THREAD_TOP)][-1][1]]
    own = _release_key(md)
    at = [facts for k, facts in line if k <= own]
    first = at[-1] if at else line[0][1]
    return [first] + [facts for _, facts in reversed(line) if facts is not first]


# Facts that changed within a V8 version, along a line's releases, keyed as
# _THREAD_TOP is (a release takes the last entry at or before its own key).
# Node 24 took V8 13.6.233.17 at 24.12.0, and with it FreeSpace sizes counted
# in words: 24.0.0-24.11.0 (13.6.233.8 and .10) still count bytes (seen in
# their cores: a free block's size Smi equals its bytes to the page's end).
_RELEASE_CONSTS: dict[tuple[int, int], list[tuple[tuple[int, int, int], dict[str, int]]]] = {
    (13, 6): [((233, 8, 0), dict(FreeSpaceSizeInWords=0)),  # 24.0.0, 24.11.0
              ((233, 17, 0), dict(FreeSpaceSizeInWords=1))],  # 24.12.0-24.21.0
}


def release_consts(md: Any) -> dict[str, int]:
    """The constants of this release within its V8 version (see _RELEASE_CONSTS)."""
    line = _RELEASE_CONSTS.get((md.v8_version[0], md.v8_version[1]))
    if not line:
        return {}
    at = [facts for k, facts in line if k <= _release_key(md)]
    return dict(at[-1] if at else line[0][1])


# V8's own tables of its embedded builtins, read where the binary is stripped
# of the Builtins_* labels (see embedded.py): BuiltinMetadataSize is the size
# of one entry of the builtin metadata array (name pointer, kind, data);
# the embedded blob's data part starts with EmbeddedDataHeaderSize bytes of
# hashes, then one EmbeddedLayoutSize-byte layout description per builtin
# (instruction offset and length first); EmbeddedCodeAlignment is the
# alignment of each builtin's code. Checked against the Builtins_* symbols of
# the unstripped release binary of each line.
_EMBEDDED_LAYOUT = {(10, 1): 16, (10, 2): 28, (10, 7): 32, (11, 3): 32, (12, 4): 12,
                    (13, 6): 12, (14, 6): 12}
for _key, (_base, _c, _f) in _BETWEEN.items():
    _EMBEDDED_LAYOUT.setdefault(_key, _EMBEDDED_LAYOUT[_base])
for _key, _size in _EMBEDDED_LAYOUT.items():
    VERSIONS[_key]["consts"].setdefault("EmbeddedLayoutSize", _size)
COMMON["consts"].update(BuiltinMetadataSize=24, EmbeddedDataHeaderSize=24,
                        EmbeddedCodeAlignment=32)


# A fast API call (optimized code calling C++ directly, without an exit frame)
# leaves only its caller's fp and a pc in that caller's code, in IsolateData,
# 0 when no such call runs. V8 10 keeps IsolateData at the start of the
# Isolate: IsolateFastCCaller* are offsets from the Isolate. From 11.3 they sit
# just before the ThreadLocalTop: TopFastCCaller* are offsets from it (the two
# swapped places in 13.6). FastCCallerPcAhead is 1 where the recorded pc is not
# the call's return address (the pc a safepoint is keyed by) but lies just
# ahead of the call, before the two stores that record pc and fp (10.2, 11.3:
# the return address is 16 and 10 bytes on there). Measured per line in cores of
# processes stopped at node's fast C++ function (its entry: rbp is the caller's
# fp, [rsp] the return address): the pinned releases, and node 19.0.0, 19.8.1,
# 21.7.3, 23.11.1 and 25.9.0 for the lines between. V8 10.1 (node 18.0-18.2,
# fast API calls off by default) has none.
_FAST_C_CALL: dict[tuple[int, int], dict[str, int]] = {
    (10, 2): dict(IsolateFastCCallerFp=256, IsolateFastCCallerPc=264, FastCCallerPcAhead=1),
    (10, 7): dict(IsolateFastCCallerFp=216, IsolateFastCCallerPc=224, FastCCallerPcAhead=1),
    (10, 8): dict(IsolateFastCCallerFp=216, IsolateFastCCallerPc=224, FastCCallerPcAhead=1),
    (11, 3): dict(TopFastCCallerFp=-32, TopFastCCallerPc=-24, FastCCallerPcAhead=1),
    (11, 8): dict(TopFastCCallerFp=-32, TopFastCCallerPc=-24, FastCCallerPcAhead=1),
    (12, 4): dict(TopFastCCallerFp=-32, TopFastCCallerPc=-24, FastCCallerPcAhead=0),
    (12, 9): dict(TopFastCCallerFp=-32, TopFastCCallerPc=-24, FastCCallerPcAhead=0),
    (13, 6): dict(TopFastCCallerFp=-24, TopFastCCallerPc=-32, FastCCallerPcAhead=0),
    (14, 1): dict(TopFastCCallerFp=-24, TopFastCCallerPc=-32, FastCCallerPcAhead=0),
    (14, 6): dict(TopFastCCallerFp=-24, TopFastCCallerPc=-32, FastCCallerPcAhead=0),
}
for _key, _extra in _FAST_C_CALL.items():
    for _name, _value in _extra.items():
        VERSIONS[_key]["consts"].setdefault(_name, _value)


# Async stack traces (V8's CaptureAsyncStackTrace). Objects whose fields the
# metadata does not name, the same on every line: a suspended generator keeps
# its bytecode offset (from the BytecodeArray's tagged address, as a frame's
# offset slot) in input_or_debug_pos; an async function its promise, an async
# generator its queue of requests (each with the promise of one next()) at +80.
# A PromiseReaction: next, reject and fulfill handlers, then the promise or
# capability it settles; a PromiseCapability: its promise first. An await
# closure's context holds the generator in its extension slot (2); a promise
# combinator's element closure the capability of its result in slot 3; the
# resolve function of a capability its promise in slot 2. Checked in cores of
# every supported line.
COMMON["fields"].update({
    ("JSGeneratorObject", "input_or_debug_pos"): 48,
    ("JSAsyncFunctionObject", "promise"): 80,
    ("JSAsyncGeneratorObject", "queue"): 80,
    ("AsyncGeneratorRequest", "promise"): 32,
    ("PromiseReaction", "next"): 8,
    ("PromiseReaction", "reject_handler"): 16,
    ("PromiseReaction", "fulfill_handler"): 24,
    ("PromiseReaction", "promise_or_capability"): 32,
    ("PromiseCapability", "promise"): 8,
    ("PromiseReactionJobTask", "handler"): 24,
    ("PromiseReactionJobTask", "promise_or_capability"): 32,
})
COMMON["consts"].update(AwaitContextGeneratorSlot=2, CombinatorCapabilitySlot=3,
                        CapabilityResolvePromiseSlot=2, AsyncTraceAllSettled=1)
# V8 10.1 (node 18.0-18.2) does not follow Promise.allSettled's element
# closures: its async stack traces end there (checked in a core of 18.0.0).
VERSIONS[(10, 1)]["consts"]["AsyncTraceAllSettled"] = 0
# The microtask V8 runs now (the current_microtask root, undefined between
# microtasks): its offset from the Isolate, in the roots table at the start of
# IsolateData. Node's patches add roots within a line (18.15 and 18.20 differ
# by a word), so, as for the thread state below, each line lists the offsets
# measured per release, keyed (build, patch, node patch number); a release
# tries its own first, then the line's others, each checked by the roots
# around it (see stack/asyncframes.py). Found in cores of a crash inside a
# microtask of the first, a middle and the last release of every line 18-26
# (the one word of the Isolate pointing at the running PromiseReactionJobTask).
_CURRENT_MICROTASK: dict[tuple[int, int], list[tuple[tuple[int, int, int], int]]] = {
    (10, 1): [((124, 8, 13), 6408)],
    (10, 2): [((154, 26, 25), 6432), ((154, 26, 39), 6440)],  # 18.15.0, 18.20.8
    (10, 7): [((193, 13, 16), 6512)],
    (10, 8): [((168, 25, 11), 6624)],
    (11, 3): [((244, 4, 3), 7000), ((244, 8, 20), 7008)],  # 20.0.0, 20.13.0-20.20.2
    (11, 8): [((172, 13, 12), 7192)],
    (12, 4): [((254, 14, 10), 7344)],  # 22.0.0-22.23.3
    (12, 9): [((202, 26, 10), 7432)],
    (13, 6): [((233, 8, 10), 9600)],  # 24.0.0-24.21.0
    (14, 1): [((146, 11, 10), 9704)],
    (14, 6): [((202, 33, 19), 9792)],  # 26.0.0-26.10.0
}
# From 12.4 every microtask and promise reaction starts with the
# continuation-preserved embedder data, which moves their other fields one word on.
for _key in [k for k in VERSIONS if k >= (12, 4)]:
    for _k in [k for k in COMMON["fields"] if k[0] in ("PromiseReactionJobTask", "PromiseReaction")]:
        VERSIONS[_key]["fields"].setdefault(_k, COMMON["fields"][_k] + 8)


def current_microtask_slots(md: Any) -> list[int]:
    """Where the release's Isolate may keep its current microtask: its own
    line's offset measured at or before it first, then the line's others."""
    line = _CURRENT_MICROTASK.get((md.v8_version[0], md.v8_version[1]))
    if line is None:
        return []
    own = _release_key(md)
    at = [slot for k, slot in line if k <= own]
    first = at[-1] if at else line[0][1]
    return [first] + [slot for _, slot in reversed(line) if slot != first]


SUPPORTED = sorted(VERSIONS)


def facts(version: tuple[int, ...]) -> dict[str, int]:
    """The table's constants for a V8 version (the nearest older line if unknown),
    for what is read before the metadata is merged."""
    key = (version[0], version[1])
    if key not in VERSIONS:
        older = [k for k in SUPPORTED if k <= key]
        key = older[-1] if older else SUPPORTED[0]
    return dict(COMMON["consts"]) | VERSIONS[key]["consts"]


def embedded_layout_sizes(version: tuple[int, ...]) -> tuple[int, ...]:
    """Layout description sizes to try: the version's own first, then every
    other line's (the search checks each table hard, so a wrong size finds nothing)."""
    own = facts(version).get("EmbeddedLayoutSize")
    rest = sorted(set(_EMBEDDED_LAYOUT.values()) - {own})
    return ((own,) if own else ()) + tuple(rest)


def apply(md: Any) -> None:
    """Fill what the metadata lacks; note an unknown version."""
    key = (md.v8_version[0], md.v8_version[1])
    entry = VERSIONS.get(key)
    if entry is None:
        older = [k for k in SUPPORTED if k <= key]
        use = older[-1] if older else SUPPORTED[0]
        entry = VERSIONS[use]
        md.unsupported = (f"V8 {md.version_text} is not in v8dbg's table "
                          f"(known: {', '.join('%d.%d' % k for k in SUPPORTED)}); "
                          f"using the facts of V8 {use[0]}.{use[1]}, results may be wrong")
    # The version entry overrides the common defaults; the binary overrides both.
    merged_consts = dict(COMMON["consts"])
    merged_consts.update(entry["consts"])
    merged_consts.update(thread_top_variants(md)[0])
    merged_consts.update(release_consts(md))
    merged_fields = dict(COMMON["fields"])
    merged_fields.update(entry["fields"])
    for name, value in merged_consts.items():
        if name not in md.consts:
            md.consts[name] = value
            md.filled.append(name)
    for k, value in merged_fields.items():
        if k not in md.fields:
            md.fields[k] = value
            md.filled.append(f"{k[0]}::{k[1]}")
    # Instance types the binary does not name come as `type_NAME` constants.
    for name, value in list(md.consts.items()):
        if name.startswith("type_") and name[5:] not in md.types:
            md.types[name[5:]] = value
            md.type_names.setdefault(value, name[5:])
    # Then those at a fixed distance from one the binary has.
    for name, (anchor, delta) in _DERIVED_TYPES.items():
        base = md.types.get(anchor, md.consts.get(anchor))
        if name not in md.types and base is not None:
            md.types[name] = base + delta
            md.type_names.setdefault(base + delta, name)
            md.filled.append(f"type_{name}")


# -- node's own structures (jshandles) -----------------------------------------------------
# What the binary's nodedbg_* symbols leave out, learned from node's and
# libuv's headers and checked in cores of every pinned line (x64 Linux). The
# nodedbg_* values themselves sit in .bss, filled in when node starts, so
# they are read from the target's memory, not from the file.
NODE_COMMON: dict[str, int] = {
    # V8's EmbedderDataArray: map and length, then one 8-byte slot per index
    # (no pointer compression, no sandbox); node keeps its Environment* there
    # at ContextEmbedderIndex::kEnvironment.
    "EmbedderDataHeader": 16,
    "EmbedderDataSlotSize": 8,
    # HandleWrap: `uv_handle_t* handle_` follows its ListNode handle_wrap_queue_
    # (node 18.0 keeps its state_ enum between them: 24 there).
    "HandleWrapHandleAfterQueue": 16,
    "HandleWrapHandleAfterQueueOld": 24,
    # libuv 1.x (unix) uv_handle_t: data, loop, type (int) at 16, ..., flags at 88.
    "UvHandleData": 0,
    "UvHandleType": 16,
    "UvHandleFlags": 88,
    # uv_stream_t (TCP, pipe, TTY): io_watcher.fd, after the stream fields.
    "UvStreamFd": 184,
    # uv_handle_type numbers of those streams, and the handle flag bits.
    "UvTypeNamedPipe": 7, "UvTypeTcp": 12, "UvTypeTty": 14,
    "UvFlagClosing": 0x1, "UvFlagClosed": 0x2, "UvFlagActive": 0x4, "UvFlagRef": 0x8,
    # ImmediateInfo's fields: kCount, kRefCount, kHasOutstanding.
    "ImmediateRefCount": 1,
}
# AsyncWrap::provider_type_ (a uint32 right after BaseObject's members), per V8
# line: node 22 on has two more words before it. The other values are tried
# when a line's own gives no known provider (a release that moved it).
_NODE_PROVIDER = {(10, 2): 32, (11, 3): 32, (12, 4): 48, (13, 6): 48, (14, 6): 48}


def node_facts(version: tuple[int, ...]) -> dict[str, int]:
    """node's structure offsets for the node line of a V8 version (nearest older if unknown)."""
    key = (version[0], version[1])
    if key not in _NODE_PROVIDER:
        older = [k for k in sorted(_NODE_PROVIDER) if k <= key]
        key = older[-1] if older else min(_NODE_PROVIDER)
    return dict(NODE_COMMON, AsyncWrapProviderType=_NODE_PROVIDER[key])


def node_provider_offsets(version: tuple[int, ...]) -> list[int]:
    """Offsets of AsyncWrap::provider_type_ to try: the line's own first."""
    own = node_facts(version)["AsyncWrapProviderType"]
    return [own] + sorted(set(_NODE_PROVIDER.values()) - {own})
# Tracing (`trace`, `catch`): where to put uprobes in the node binary, per
# line, and the offsets the probe programs read. Functions are named by their
# mangled symbol (the binary's own symbol table gives the address); each entry
# holds from its V8 line on until a later entry replaces a key. Checked on the
# pinned release of each line: every site resolves and fires (tests/test_trace.py).
#
# GC: V8 calls Heap::CallGCPrologueCallbacks(this, GCType, flags[, scope])
# before each collection and CallGCEpilogueCallbacks after, whether or not
# callbacks are registered; perf_hooks' 'gc' entries are taken from the same
# calls, so the GCType in esi names the collection and the time between the
# two is its pause. Thread pool: uv_queue_work(loop, req, work_cb, after_cb)
# (it inlines uv__work_submit, so it is its own site), uv__work_submit(loop,
# w, kind, work, done) for libuv's own jobs (fs, DNS, random), and the work
# functions the pool threads run (entry: start; return: end). A uprobe on an
# instruction the kernel must single-step costs ten times one it emulates (a
# push; inferior/uprobes.py), so where a release's site starts otherwise the
# table names a stand-in: uv_queue_work's call of uv_once (return address,
# register holding the request), node's pool callback for uv__queue_work,
# Parser::on_headers_complete for the llhttp callbacks. A uv_work_t keeps
# work_cb at +72 and its uv__work at +88; node's ThreadPoolWork (vtable,
# env_, then work_req_) puts every job of its own through one lambda, so the
# vtable at req-16 names the job's class; an add-on's N-API async work is
# such a job (node_api.cc's uvimpl::Work), whose execute callback, the
# add-on's function, sits at req+152 on every pinned line (its
# DoThreadPoolWork thunk reads it at this+0xa8 from the ThreadPoolWork part).
# HTTP: node's llhttp callbacks
# (Parser::Proxy<...>::Raw(llhttp_t*, ...)); llhttp_t keeps the method byte
# at +73.
_GC_SITES_OLD = {
    "gc_prologue": "_ZN2v88internal4Heap23CallGCPrologueCallbacksENS_6GCTypeENS_15GCCallbackFlagsE",
    "gc_epilogue": "_ZN2v88internal4Heap23CallGCEpilogueCallbacksENS_6GCTypeENS_15GCCallbackFlagsE",
}
_GC_SITES_SCOPED = {
    "gc_prologue": "_ZN2v88internal4Heap23CallGCPrologueCallbacksENS_6GCTypeENS_15GCCallbackFlags"
                   "ENS0_8GCTracer5Scope7ScopeIdE",
    "gc_epilogue": "_ZN2v88internal4Heap23CallGCEpilogueCallbacksENS_6GCTypeENS_15GCCallbackFlags"
                   "ENS0_8GCTracer5Scope7ScopeIdE",
}


def _http_sites(ns: str) -> dict[str, str]:
    """node's llhttp callbacks, in the namespace the Parser class lives in."""
    p = f"_ZN4node{ns}6Parser5ProxyIMS1_"
    return {"http_message_begin": p + "FivEXadL_ZNS1_16on_message_beginEvEEE3RawEP18llhttp__internal_s",
            "http_url": p + "FiPKcmEXadL_ZNS1_6on_urlES4_mEEE3RawEP18llhttp__internal_sS4_m",
            "http_headers_complete": p + "FivEXadL_ZNS1_19on_headers_completeEvEEE3RawEP18llhttp__internal_s"}


# What node 22 and later (its libuv) name the thread pool's threads; the
# earlier lines leave them unnamed (then every thread but the main one is
# taken for a pool thread).
POOL_THREAD_NAME = "libuv-worker"

TRACE_SITES: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((10, 1), {
        **_GC_SITES_OLD,
        **_http_sites("12_GLOBAL__N_1"),
        "uv_queue_work": "uv_queue_work",
        "uv_work_submit": "uv__work_submit",
        "uv_once": "uv_once",
        # The pool's work functions: what a unit of work runs, by libuv's name.
        "uv_work_functions": ("uv__queue_work", "uv__fs_work", "uv__getaddrinfo_work",
                              "uv__getnameinfo_work", "uv__random_work"),
        "node_pool_work": "_ZZN4node14ThreadPoolWork12ScheduleWorkEvENUlP9uv_work_sE_4_FUNES2_",
        "uv_work_t_work_req": 88,
        # uv_queue_work's call of uv_once(): the return address's offset in
        # uv_queue_work and the register that holds the request there. A
        # probe on uv_once's entry (a push, emulated) stands in for one on
        # uv_queue_work's, where that first instruction is single-stepped.
        "uv_queue_work_once": (0x4d, "bx"),
        # ... and uv__work_submit's (it calls uv_once too): return offset, the
        # register holding w, where the work function is (a register, or
        # "bp-0xN": the caller's frame).
        "uv_work_submit_once": (0x3a, "r12", "bp-0x30"),
        "uv_work_t_work_cb": 72,
        # libuv's worker() (the pool thread's loop) and the direct calls it
        # makes just before and just after `w->work(w)`: uv_mutex_unlock and
        # uv_mutex_lock (a call rel32 the kernel emulates). Their offsets in
        # worker(), the register holding &w->wq there and wq's offset in
        # struct uv__work: a perf-event uprobe on each times a job whose
        # work function's own entry would be single-stepped.
        "uv_worker": "worker",
        "uv_mutex_unlock": "uv_mutex_unlock",
        "uv_mutex_lock": "uv_mutex_lock",
        "uv_worker_work_calls": (0x78, 0x8f, "bx", 0x18),
        "ThreadPoolWork_work_req": 16,
        "napi_work_vtable": "_ZTVN12_GLOBAL__N_16uvimpl4WorkE",
        "napi_work_execute": 152,
        "llhttp_method": 73,
        # v8::GCType bits, as perf_hooks' entry.detail.kind has them.
        "gc_types": {1: "scavenge", 2: "minor-mark-sweep", 4: "mark-compact",
                     8: "incremental", 16: "weak-callbacks",
                     0x100: "scavenge", 0x101: "mark-compact", 0x102: "minor-mark-compact"},
    }),
    # V8 10.2 inlines the callbacks' calls into PerformGarbageCollection(this,
    # GarbageCollector, reason, ...) (a constprop clone of it, called from
    # CollectGarbage, in node 18.20.8): its entry and return bound each
    # full or young collection; the out-of-line prologue still runs for
    # incremental marking. Its collector numbers go to gc_types from 0x100.
    ((10, 2), {"gc_perform": (
        "_ZN2v88internal4Heap24PerformGarbageCollectionENS0_16GarbageCollectorENS0_23Garbage"
        "CollectionReasonEPKcNS_15GCCallbackFlagsE.constprop.1331",
        "_ZN2v88internal4Heap24PerformGarbageCollectionENS0_16GarbageCollectorENS0_23Garbage"
        "CollectionReasonEPKcNS_15GCCallbackFlagsE"),
        # ... and into Heap::InvokeIncrementalMarking{Pro,Epi}logueCallbacks,
        # which bound each incremental-marking step perf_hooks reports.
        "gc_incremental": ("_ZN2v88internal4Heap41InvokeIncrementalMarkingPrologueCallbacksEv",
                           "_ZN2v88internal4Heap41InvokeIncrementalMarkingEpilogueCallbacksEv")}),
    ((11, 3), {**_GC_SITES_SCOPED, "gc_perform": (), "gc_incremental": (),
               "uv_worker_work_calls": (0x74, 0x8b, "bx", 0x18),
               "uv_queue_work_once": None,  # uv_queue_work starts with a push
               "uv_work_submit_once": None}),
    # node 24's llhttp callbacks start with a test of the Parser's
    # pending-pause flag (a cmpb, single-stepped): its out-of-line
    # Parser::on_headers_complete() (Parser*; its llhttp_t at +0x60) and the
    # url_ StringPtr at llhttp_t+0x2668 (on_url's StringPtr::Update) instead.
    ((13, 6), {"uv_queue_work_once": (0x3c, "bx"), "uv_work_submit_once": (0x2f, "bx", "r14"),
               "http_on_headers_complete": "_ZN4node11http_parser6Parser19on_headers_completeEv",
               "Parser_llhttp": 0x60, "llhttp_url": 0x2668}),
    ((12, 4), {**_http_sites("11http_parser"),
               "uv_worker_work_calls": (0x84, 0x9b, "bx", 0x18)}),
    # Built by clang from node 26: the lambda's static invoker is __invoke.
    ((14, 6), {"node_pool_work": "_ZZN4node14ThreadPoolWork12ScheduleWorkEvENUlP9uv_work_sE_8__invokeES2_",
               "http_on_headers_complete": None, "llhttp_url": None,
               "uv_worker_work_calls": None,  # uv__queue_work starts with a push
               "uv_queue_work_once": (0x3b, "r14"), "uv_work_submit_once": (0x2c, "bx", "r15")}),
]


def trace_sites(version: tuple[int, ...]) -> dict[str, Any]:
    """The probe sites and offsets of a V8 line (a later unknown line takes
    the newest entry; the caller checks each symbol is in the binary)."""
    out: dict[str, Any] = {}
    for since, entry in TRACE_SITES:
        if (version[0], version[1]) >= since:
            out.update(entry)
    return out


# -- objects' sizes the maps do not give --------------------------------------------------
# Instance types whose objects have a size the map leaves open (instance
# size 0) but V8 fixes, in words. 11.3's WasmNull is its map word alone (in
# each node 20 core the read-only space's `length` string starts right
# after it); sized to the next map word from two words on, it swallowed
# that string.
_FIXED_OBJECT_WORDS: dict[tuple[int, int], dict[str, int]] = {
    (10, 2): {}, (11, 3): {"WASM_NULL_TYPE": 1}, (12, 4): {}}


def fixed_object_words(version: tuple[int, ...]) -> dict[str, int]:
    """Instance type name -> size in words, of the objects whose map gives no size
    but whose size V8 `version` fixes (the nearest older line's for a line between)."""
    return _older(_FIXED_OBJECT_WORDS, version) or {}


# -- heap snapshot format ------------------------------------------------------------------
# What each line's V8 writes as `snapshot.meta` of a .heapsnapshot
# (HeapSnapshotJSONSerializer::SerializeSnapshot). trace_node_id went with
# V8 13; "object shape" nodes came with 11; V8 11.3 alone lists "wasm
# object"; the node fields' type list keeps one "number" too many until 14.
_SNAPSHOT_NODE_TYPES = ["hidden", "array", "string", "object", "code", "closure", "regexp",
                        "number", "native", "synthetic", "concatenated string",
                        "sliced string", "symbol", "bigint"]


def heap_snapshot_meta(version: tuple[int, ...]) -> tuple[dict, dict]:
    """(meta, other header fields) of the heap snapshots V8 `version` writes."""
    key = (version[0], version[1])
    fields = ["type", "name", "id", "self_size", "edge_count"]
    if key < (13, 0):
        fields.append("trace_node_id")
    fields.append("detachedness")
    types = list(_SNAPSHOT_NODE_TYPES)
    if key >= (11, 0):
        types.append("object shape")
    if key[0] == 11:
        types.append("wasm object")
    numbers = 5 if key < (14, 0) else len(fields) - 2
    meta = {
        "node_fields": fields,
        "node_types": [types, "string"] + ["number"] * numbers,
        "edge_fields": ["type", "name_or_index", "to_node"],
        "edge_types": [["context", "element", "property", "internal", "hidden", "shortcut",
                        "weak"], "string_or_number", "node"],
        "trace_function_info_fields": ["function_id", "name", "script_name", "script_id",
                                       "line", "column"],
        "trace_node_fields": ["id", "function_info_index", "count", "size", "children"],
        "sample_fields": ["timestamp_us", "last_assigned_id"],
        "location_fields": ["object_index", "script_id", "line", "column"],
    }
    extra = {"extra_native_bytes": 0} if key >= (13, 0) else {}
    return meta, extra


# -- heap snapshot: internal objects' fields -----------------------------------------------
# The fields of V8's internal objects its heap snapshot names (`internal`
# edges; V8HeapExplorer::Extract*References, heap-snapshot-generator.cc),
# per class: (metadata field, V8's name). A class listed has only these
# slots named; V8 files its other slots as numbered `hidden` edges. Offsets
# come from the metadata, or from `SNAPSHOT_FIELD_OFFSETS` where it lacks
# them. Where V8 picks the name by what the slot holds (a Map's constructor
# or back pointer, its transitions or prototype info) the first name here
# is the default and heap/edges.py picks by the target's type. Checked
# against V8's own snapshots of the same heap on every pinned line.
_SNAPSHOT_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "Map": (("prototype", "prototype"), ("constructor_or_back_pointer", "constructor"),
            ("instance_descriptors", "descriptors"), ("dependent_code", "dependent_code"),
            ("raw_transitions", "transitions")),
    "SharedFunctionInfo": (("name_or_scope_info", "name_or_scope_info"),
                           ("script", "script"), ("function_data", "function_data"),
                           ("feedback_metadata", "raw_outer_scope_info_or_feedback_metadata")),
    "Script": (("source", "source"), ("name", "name"), ("context_data", "context_data"),
               ("line_ends", "line_ends")),
    "AccessorInfo": (("name", "name"), ("data", "data")),
    "AccessorPair": (("getter", "getter"), ("setter", "setter")),
    "FeedbackCell": (("value", "value"),),
    "Cell": (("value", "value"),),
    "PropertyCell": (("value", "value"), ("dependent_code", "dependent_code")),
    "AllocationSite": (("transition_info_or_boilerplate", "transition_info"),
                       ("nested_site", "nested_site"), ("dependent_code", "dependent_code")),
    "ArrayBoilerplateDescription": (("constant_elements", "constant_elements"),),
    "DescriptorArray": (("enum_cache", "enum_cache"),),
    "Symbol": (("name", "name"),),
    # Named by none: their slots are `hidden` edges (a BytecodeArray's too:
    # ExtractBytecodeArrayReferences only tags what it holds). A Code
    # object's are named by its kind (code_snapshot_fields).
    "PropertyArray": (), "FunctionTemplateInfo": (), "Oddball": (), "JSRegExp": (),
    "BytecodeArray": (), "Code": (),
}
# Before 12: a SharedFunctionInfo's script slot is `script_or_debug_info`,
# an AccessorInfo's getter and setter are Foreigns (10.2) V8 names too.
_SNAPSHOT_FIELDS_10 = {
    "SharedFunctionInfo": (("name_or_scope_info", "name_or_scope_info"),
                           ("script_or_debug_info", "script_or_debug_info"),
                           ("function_data", "function_data"),
                           ("feedback_metadata", "raw_outer_scope_info_or_feedback_metadata")),
    "AccessorInfo": (("name", "name"), ("expected_receiver_type", "expected_receiver_type"),
                     ("getter", "getter"), ("setter", "setter"), ("data", "data")),
}
_SNAPSHOT_FIELDS_11 = {"SharedFunctionInfo": _SNAPSHOT_FIELDS_10["SharedFunctionInfo"]}
# From 13: the function data split in a trusted and an untrusted slot.
_SNAPSHOT_FIELDS_13 = {
    "SharedFunctionInfo": (("name_or_scope_info", "name_or_scope_info"),
                           ("script", "script"), ("function_data", "trusted_function_data"),
                           ("untrusted_function_data", "untrusted_function_data"),
                           ("feedback_metadata", "raw_outer_scope_info_or_feedback_metadata")),
}
# From 12.4 machine code's instructions are an InstructionStream of their
# own (ExtractInstructionStreamReferences): its Code and relocation info.
_STREAM_FIELDS = {"InstructionStream": (("code", "code"), ("relocation_info", "relocation_info"))}
_SNAPSHOT_FIELDS_BY_LINE = {(10, 2): _SNAPSHOT_FIELDS_10, (11, 3): _SNAPSHOT_FIELDS_11,
                            (12, 4): _STREAM_FIELDS, (13, 6): _SNAPSHOT_FIELDS_13 | _STREAM_FIELDS,
                            (14, 6): _SNAPSHOT_FIELDS_13 | _STREAM_FIELDS}
# Offsets of those fields the binaries' metadata lacks (x64, no pointer
# compression), read in cores of every pinned line.
_SNAPSHOT_OFFSETS_COMMON = {
    ("Script", "context_data"): 40, ("Cell", "value"): 8,
    ("PropertyCell", "dependent_code"): 32, ("AllocationSite", "dependent_code"): 24,
    ("ArrayBoilerplateDescription", "constant_elements"): 16,
    ("DescriptorArray", "enum_cache"): 16,
    ("AccessorInfo", "name"): 8, ("AccessorInfo", "data"): 16,
}
# An InstructionStream's Code and relocation info, from 12.4.
_STREAM_OFFSETS = {("InstructionStream", "code"): 8, ("InstructionStream", "relocation_info"): 16}
_SNAPSHOT_OFFSETS_BY_LINE = {
    # 14.6's DescriptorArray has one word more before its enum cache; its
    # AccessorInfo keeps its data before its name.
    (14, 6): {("DescriptorArray", "enum_cache"): 24, ("AccessorInfo", "data"): 8,
              ("AccessorInfo", "name"): 16, **_STREAM_OFFSETS},
    (13, 6): _STREAM_OFFSETS,
    (12, 4): _STREAM_OFFSETS,
    (10, 2): {("AccessorInfo", "expected_receiver_type"): 24, ("AccessorInfo", "setter"): 32,
              ("AccessorInfo", "getter"): 40, ("AccessorInfo", "data"): 56,
              ("Code", "relocation_info"): 8},
}

# A Code object's fields V8's snapshot names (ExtractCodeReferences), by the
# code's kind, as (metadata field, V8's name): `every` kind's; baseline
# code's (its bytecode and its bytecode offset table in the slots other
# code keeps its deoptimization data and source positions in); the other
# kinds' (`deopt_kinds`: every other kind, or from 12.4 optimized code
# alone, uses_deoptimization_data). From 12.4 a Code without an
# instruction stream of its own (a builtin's) has none named (`stream`).
# Checked against V8's own snapshots of the same heap on every pinned line.
_CODE_FIELDS_10: dict[str, Any] = {
    "every": (("relocation_info", "relocation_info"),),
    "baseline": (("deoptimization_data", "interpreter_data"),
                 ("source_position_table", "bytecode_offset_table")),
    "other": (("deoptimization_data", "deoptimization_data"),
              ("source_position_table", "source_position_table")),
    "deopt_kinds": "all", "stream": None}
_CODE_FIELDS_12: dict[str, Any] = _CODE_FIELDS_10 | {
    "every": (("instruction_stream", "instruction_stream"),),
    "deopt_kinds": "optimized", "stream": "instruction_stream"}
_CODE_FIELDS = {(10, 2): _CODE_FIELDS_10, (12, 4): _CODE_FIELDS_12}


def code_snapshot_fields(version: tuple[int, ...]) -> dict[str, Any]:
    """How V8 `version`'s heap snapshot names a Code object's fields (the
    nearest older line's for a line not in the table)."""
    return _older(_CODE_FIELDS, version) or _CODE_FIELDS[(10, 2)]


def snapshot_fields(version: tuple[int, ...]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Class -> ((metadata field, V8's edge name), ...) of the internal
    objects' fields V8 `version`'s heap snapshot names (the nearest older
    line's for a line not in the table)."""
    key = (version[0], version[1])
    older = [k for k in sorted(_SNAPSHOT_FIELDS_BY_LINE) if k <= key]
    own = _SNAPSHOT_FIELDS_BY_LINE[older[-1] if older else min(_SNAPSHOT_FIELDS_BY_LINE)]
    return _SNAPSHOT_FIELDS | own


# A function has its prototype slot (JSFunction::prototype_or_initial_map,
# which V8's snapshot names by what it holds) when its map's bit_field
# (Map::Bits1) has `has_prototype_slot` set: bit 7 on every pinned line
# (checked in each line's cores: set on exactly the functions whose slot
# holds a map, a prototype or the hole; a function without one may keep an
# in-object property in that word).
_PROTOTYPE_SLOT_BIT = {(10, 2): 7}


def prototype_slot_bit(version: tuple[int, ...]) -> int:
    """The bit of a Map's bit_field that says its functions have a prototype slot."""
    return _older(_PROTOTYPE_SLOT_BIT, version) or _PROTOTYPE_SLOT_BIT[(10, 2)]


def snapshot_field_offsets(version: tuple[int, ...]) -> dict[tuple[str, str], int]:
    """(class, field) -> byte offset of the fields `snapshot_fields` names
    that the metadata may lack (the metadata's own offsets win)."""
    key = (version[0], version[1])
    return _SNAPSHOT_OFFSETS_COMMON | _SNAPSHOT_OFFSETS_BY_LINE.get(key, {})


# A native context's slots by V8's names (NATIVE_CONTEXT_FIELDS, as
# ExtractContextReferences names them), from slot 2 (`extension`, the global
# object; so named until 14, `global_object` from 14.6) on, one name a slot,
# "-" for a slot not known. Read off V8's own heap snapshot of the leak
# fixture's core on each pinned line, slot by slot against the same core's
# native context: a slot that held no object there (a Smi, undefined, a
# lazily made map or function not yet made) is not known, and stays a
# numbered `hidden` edge if another program's holds one. Checked besides:
# `object_function` holds the Object function, `array_function` Array.
# `template_weakmap`, made lazily, is the slot before
# `typed_array_function` on every line (NATIVE_CONTEXT_FIELDS' order; held
# and so named in V8's file of the TypeScript core on 18 and 24).
_NATIVE_CONTEXT_SLOTS: dict[tuple[int, int], str] = {
    (10, 2): (
        "extension global_proxy_object embedder_data - generator_next_internal "
        "async_module_evaluate_internal reflect_apply reflect_construct promise_then "
        "function_prototype_apply uint8_array_fun int8_array_fun uint16_array_fun "
        "int16_array_fun uint32_array_fun int32_array_fun float32_array_fun float64_array_fun "
        "uint8_clamped_array_fun biguint64_array_fun bigint64_array_fun "
        "rab_gsab_uint8_array_map rab_gsab_int8_array_map rab_gsab_uint16_array_map "
        "rab_gsab_int16_array_map rab_gsab_uint32_array_map rab_gsab_int32_array_map "
        "rab_gsab_float32_array_map rab_gsab_float64_array_map "
        "rab_gsab_uint8_clamped_array_map rab_gsab_biguint64_array_map "
        "rab_gsab_bigint64_array_map accessor_property_descriptor_map - array_buffer_fun "
        "array_buffer_map array_buffer_noinit_fun array_function array_join_stack "
        "async_from_sync_iterator_map async_function_constructor async_function_object_map "
        "async_generator_function_function atomics_object bigint_function boolean_function "
        "bound_function_with_constructor_map bound_function_without_constructor_map "
        "call_as_constructor_delegate call_as_function_delegate call_async_module_fulfilled "
        "call_async_module_rejected callsite_function context_extension_function "
        "data_property_descriptor_map data_view_fun date_function - empty_function - - "
        "extras_binding_object fast_aliased_arguments_map fast_template_instantiations_cache "
        "function_function function_prototype generator_function_function "
        "generator_object_prototype_map async_generator_object_prototype_map "
        "initial_array_iterator_map initial_array_iterator_prototype initial_array_prototype "
        "initial_error_prototype initial_generator_prototype initial_async_iterator_prototype "
        "initial_async_generator_prototype initial_iterator_prototype "
        "initial_map_iterator_prototype initial_map_prototype_map initial_object_prototype "
        "initial_set_iterator_prototype initial_set_prototype initial_set_prototype_map "
        "initial_string_iterator_map initial_string_iterator_prototype "
        "initial_string_prototype initial_weakmap_prototype_map initial_weakset_prototype_map "
        "intl_collator_function intl_date_time_format_function intl_display_names_function "
        "intl_number_format_function intl_locale_function intl_list_format_function "
        "intl_plural_rules_function intl_relative_time_format_function "
        "intl_segmenter_function intl_segments_map intl_segment_iterator_map "
        "iterator_result_map js_array_packed_smi_elements_map js_array_holey_smi_elements_map "
        "js_array_packed_elements_map js_array_holey_elements_map "
        "js_array_packed_double_elements_map js_array_holey_double_elements_map js_map_fun "
        "js_map_map js_module_namespace_map js_set_fun js_set_map js_weak_map_fun "
        "js_weak_set_fun js_weak_ref_fun js_finalization_registry_fun - - - - - - - - - - - - "
        "native_context_map function_context_map module_context_map eval_context_map "
        "script_context_map await_context_map block_context_map catch_context_map "
        "with_context_map debug_evaluate_context_map map_cache map_key_iterator_map "
        "map_key_value_iterator_map map_value_iterator_map - math_random_state "
        "math_random_cache message_listeners normalized_map_cache number_function "
        "object_function object_function_prototype object_function_prototype_map - - - - "
        "proxy_callable_map proxy_constructor_map proxy_function proxy_map "
        "proxy_revocable_result_map promise_prototype - regexp_exec_function regexp_function "
        "regexp_last_match_info regexp_match_all_function regexp_match_function "
        "regexp_prototype regexp_prototype_map regexp_replace_function regexp_result_map "
        "regexp_result_with_indices_map regexp_result_indices_map regexp_search_function "
        "regexp_split_function initial_regexp_string_iterator_prototype_map "
        "script_context_table - security_token serialized_objects set_value_iterator_map "
        "set_key_value_iterator_map shared_array_buffer_fun sloppy_arguments_map "
        "slow_aliased_arguments_map strict_arguments_map slow_object_with_null_prototype_map "
        "slow_object_with_object_prototype_map slow_template_instantiations_cache "
        "atomics_waitasync_promises - regexp_species_protector sloppy_function_map "
        "sloppy_function_with_name_map sloppy_function_without_prototype_map "
        "sloppy_function_with_readonly_prototype_map strict_function_map "
        "strict_function_with_name_map strict_function_with_readonly_prototype_map "
        "strict_function_without_prototype_map method_with_name_map async_function_map "
        "async_function_with_name_map generator_function_map generator_function_with_name_map "
        "async_generator_function_map async_generator_function_with_name_map "
        "class_function_map string_function string_function_prototype_map symbol_function "
        "wasm_exported_function_map wasm_tag_constructor wasm_exception_constructor "
        "wasm_global_constructor wasm_instance_constructor wasm_memory_constructor "
        "wasm_module_constructor wasm_table_constructor - template_weakmap "
        "typed_array_function typed_array_prototype array_entries_iterator "
        "array_for_each_iterator array_keys_iterator array_values_iterator error_function "
        "error_to_string eval_error_function aggregate_error_function global_eval_fun "
        "global_parse_float_fun global_parse_int_fun global_proxy_function map_delete map_get "
        "map_has map_set finalization_registry_cleanup_some function_has_instance "
        "function_to_string object_to_string object_value_of_function promise_all "
        "promise_all_settled promise_any promise_function range_error_function "
        "reference_error_function set_add set_delete set_has syntax_error_function "
        "type_error_function uri_error_function wasm_compile_error_function "
        "wasm_link_error_function wasm_runtime_error_function wasm_exception_error_function "
        "weakmap_set weakmap_get weakmap_delete weakset_add - retained_maps "),
    (11, 3): (
        "extension global_proxy_object embedder_data - generator_next_internal "
        "async_module_evaluate_internal reflect_apply reflect_construct promise_then "
        "function_prototype_apply uint8_array_fun int8_array_fun uint16_array_fun "
        "int16_array_fun uint32_array_fun int32_array_fun float32_array_fun float64_array_fun "
        "uint8_clamped_array_fun biguint64_array_fun bigint64_array_fun "
        "rab_gsab_uint8_array_map rab_gsab_int8_array_map rab_gsab_uint16_array_map "
        "rab_gsab_int16_array_map rab_gsab_uint32_array_map rab_gsab_int32_array_map "
        "rab_gsab_float32_array_map rab_gsab_float64_array_map "
        "rab_gsab_uint8_clamped_array_map rab_gsab_biguint64_array_map "
        "rab_gsab_bigint64_array_map accessor_property_descriptor_map - array_buffer_fun "
        "array_buffer_map array_buffer_noinit_fun array_function array_join_stack "
        "async_from_sync_iterator_map async_function_constructor async_function_object_map "
        "async_generator_function_function atomics_object bigint_function boolean_function "
        "bound_function_with_constructor_map bound_function_without_constructor_map "
        "call_as_constructor_delegate call_as_function_delegate callsite_function "
        "context_extension_function data_property_descriptor_map data_view_fun date_function "
        "- empty_function - - - extras_binding_object fast_aliased_arguments_map "
        "fast_template_instantiations_cache function_function function_prototype "
        "generator_function_function generator_object_prototype_map "
        "async_generator_object_prototype_map initial_array_iterator_map "
        "initial_array_iterator_prototype initial_array_prototype initial_error_prototype "
        "initial_generator_prototype initial_async_iterator_prototype "
        "initial_async_generator_prototype initial_iterator_prototype "
        "initial_map_iterator_prototype initial_map_prototype_map initial_object_prototype "
        "initial_set_iterator_prototype initial_set_prototype initial_set_prototype_map "
        "initial_string_iterator_map initial_string_iterator_prototype "
        "initial_string_prototype initial_weakmap_prototype_map initial_weakset_prototype_map "
        "intl_collator_function intl_date_time_format_function intl_display_names_function - "
        "intl_number_format_function intl_locale_function intl_list_format_function "
        "intl_plural_rules_function intl_relative_time_format_function "
        "intl_segmenter_function intl_segments_map intl_segment_iterator_map - - - - - - "
        "iterator_result_map js_array_packed_smi_elements_map js_array_holey_smi_elements_map "
        "js_array_packed_elements_map js_array_holey_elements_map "
        "js_array_packed_double_elements_map js_array_holey_double_elements_map "
        "js_array_template_literal_object_map - - js_map_fun js_map_map "
        "js_module_namespace_map - js_set_fun js_set_map js_weak_map_fun js_weak_set_fun "
        "js_weak_ref_fun js_finalization_registry_fun - - - - - - - - - - json_object - - "
        "native_context_map function_context_map module_context_map eval_context_map "
        "script_context_map await_context_map block_context_map catch_context_map "
        "with_context_map debug_evaluate_context_map js_rab_gsab_data_view_map map_cache "
        "map_key_iterator_map map_key_value_iterator_map map_value_iterator_map - "
        "math_random_state math_random_cache message_listeners normalized_map_cache "
        "number_function object_function object_function_prototype "
        "object_function_prototype_map - - - - proxy_callable_map proxy_constructor_map "
        "proxy_function proxy_map proxy_revocable_result_map promise_prototype - "
        "regexp_exec_function regexp_function regexp_last_match_info "
        "regexp_match_all_function regexp_match_function regexp_prototype "
        "regexp_prototype_map regexp_replace_function regexp_result_map "
        "regexp_result_with_indices_map regexp_result_indices_map regexp_search_function "
        "regexp_split_function initial_regexp_string_iterator_prototype_map "
        "script_context_table - security_token serialized_objects set_value_iterator_map "
        "set_key_value_iterator_map shared_array_buffer_fun sloppy_arguments_map "
        "slow_aliased_arguments_map strict_arguments_map slow_object_with_null_prototype_map "
        "slow_object_with_object_prototype_map slow_template_instantiations_cache "
        "atomics_waitasync_promises - regexp_species_protector sloppy_function_map "
        "sloppy_function_with_name_map sloppy_function_without_prototype_map "
        "sloppy_function_with_readonly_prototype_map strict_function_map "
        "strict_function_with_name_map strict_function_with_readonly_prototype_map "
        "strict_function_without_prototype_map method_with_name_map async_function_map "
        "async_function_with_name_map generator_function_map generator_function_with_name_map "
        "async_generator_function_map async_generator_function_with_name_map "
        "class_function_map string_function string_function_prototype_map symbol_function "
        "wasm_exported_function_map wasm_tag_constructor wasm_exception_constructor "
        "wasm_global_constructor wasm_instance_constructor wasm_memory_constructor "
        "wasm_module_constructor wasm_table_constructor - template_weakmap typed_array_function "
        "typed_array_prototype array_entries_iterator array_for_each_iterator "
        "array_keys_iterator array_values_iterator error_function error_to_string "
        "eval_error_function aggregate_error_function global_eval_fun global_parse_float_fun "
        "global_parse_int_fun global_proxy_function map_delete map_get map_has map_set "
        "finalization_registry_cleanup_some function_has_instance function_to_string "
        "object_to_string object_value_of_function promise_all promise_all_settled "
        "promise_any promise_function range_error_function reference_error_function set_add "
        "set_delete set_has - syntax_error_function type_error_function uri_error_function "
        "wasm_compile_error_function wasm_link_error_function wasm_runtime_error_function "
        "weakmap_set weakmap_get weakmap_delete weakset_add - retained_maps "),
    (12, 4): (
        "extension global_proxy_object embedder_data - generator_next_internal "
        "async_module_evaluate_internal reflect_apply reflect_construct promise_then "
        "function_prototype_apply uint8_array_fun int8_array_fun uint16_array_fun "
        "int16_array_fun uint32_array_fun int32_array_fun float32_array_fun float64_array_fun "
        "uint8_clamped_array_fun biguint64_array_fun bigint64_array_fun - "
        "rab_gsab_uint8_array_map rab_gsab_int8_array_map rab_gsab_uint16_array_map "
        "rab_gsab_int16_array_map rab_gsab_uint32_array_map rab_gsab_int32_array_map "
        "rab_gsab_float32_array_map rab_gsab_float64_array_map "
        "rab_gsab_uint8_clamped_array_map rab_gsab_biguint64_array_map "
        "rab_gsab_bigint64_array_map - accessor_property_descriptor_map - array_buffer_fun "
        "array_buffer_map array_buffer_noinit_fun array_function array_join_stack - "
        "async_from_sync_iterator_map async_function_constructor async_function_object_map "
        "async_generator_function_function bigint_function boolean_function "
        "bound_function_with_constructor_map bound_function_without_constructor_map "
        "call_as_constructor_delegate call_as_function_delegate callsite_function "
        "context_extension_function data_property_descriptor_map data_view_fun date_function "
        "- empty_function - - - extras_binding_object fast_aliased_arguments_map "
        "fast_template_instantiations_cache function_function function_prototype "
        "generator_function_function generator_object_prototype_map "
        "async_generator_object_prototype_map initial_array_iterator_map "
        "initial_array_iterator_prototype initial_array_prototype initial_error_prototype "
        "initial_generator_prototype initial_async_iterator_prototype "
        "initial_async_generator_prototype initial_iterator_prototype "
        "initial_map_iterator_prototype initial_map_prototype_map initial_object_prototype "
        "initial_set_iterator_prototype initial_set_prototype initial_set_prototype_map "
        "initial_string_iterator_map initial_string_iterator_prototype "
        "initial_string_prototype initial_weakmap_prototype_map initial_weakset_prototype_map "
        "intl_collator_function intl_date_time_format_function intl_display_names_function - "
        "intl_number_format_function intl_locale_function intl_list_format_function "
        "intl_plural_rules_function intl_relative_time_format_function "
        "intl_segmenter_function intl_segments_map intl_segment_iterator_map "
        "iterator_filter_helper_map iterator_map_helper_map iterator_take_helper_map "
        "iterator_drop_helper_map iterator_flatMap_helper_map iterator_function "
        "valid_iterator_wrapper_map iterator_result_map js_array_packed_smi_elements_map "
        "js_array_holey_smi_elements_map js_array_packed_elements_map "
        "js_array_holey_elements_map js_array_packed_double_elements_map "
        "js_array_holey_double_elements_map js_array_template_literal_object_map js_map_fun "
        "js_map_map js_module_namespace_map js_raw_json_map js_set_fun js_set_map "
        "js_weak_map_fun js_weak_set_fun js_weak_ref_fun js_finalization_registry_fun - - - - "
        "- - - - - - json_object promise_withresolvers_result_map - - - meta_map "
        "function_context_map module_context_map eval_context_map script_context_map "
        "await_context_map block_context_map catch_context_map with_context_map "
        "debug_evaluate_context_map js_rab_gsab_data_view_map map_cache map_key_iterator_map "
        "map_key_value_iterator_map map_value_iterator_map - math_random_state "
        "math_random_cache normalized_map_cache number_function object_function "
        "object_function_prototype object_function_prototype_map - - - - proxy_callable_map "
        "proxy_constructor_map proxy_function proxy_map proxy_revocable_result_map "
        "promise_prototype - regexp_exec_function regexp_function regexp_last_match_info "
        "regexp_match_all_function regexp_match_function regexp_prototype "
        "regexp_prototype_map regexp_replace_function regexp_result_map "
        "regexp_result_with_indices_map regexp_result_indices_map regexp_search_function "
        "regexp_split_function initial_regexp_string_iterator_prototype_map "
        "script_context_table - security_token serialized_objects set_value_iterator_map "
        "set_key_value_iterator_map shared_array_buffer_fun sloppy_arguments_map "
        "slow_aliased_arguments_map strict_arguments_map slow_object_with_null_prototype_map "
        "slow_object_with_object_prototype_map slow_template_instantiations_cache "
        "atomics_waitasync_promises - regexp_species_protector sloppy_function_map "
        "sloppy_function_with_name_map sloppy_function_without_prototype_map "
        "sloppy_function_with_readonly_prototype_map strict_function_map "
        "strict_function_with_name_map strict_function_with_readonly_prototype_map "
        "strict_function_without_prototype_map method_with_name_map async_function_map "
        "async_function_with_name_map generator_function_map generator_function_with_name_map "
        "async_generator_function_map async_generator_function_with_name_map "
        "class_function_map string_function string_function_prototype_map symbol_function - "
        "wasm_webassembly_object wasm_exported_function_map wasm_tag_constructor "
        "wasm_exception_constructor wasm_global_constructor wasm_instance_constructor "
        "wasm_js_tag wasm_memory_constructor wasm_module_constructor wasm_table_constructor - "
        "template_weakmap typed_array_function typed_array_prototype array_entries_iterator "
        "array_for_each_iterator array_keys_iterator array_values_iterator error_function "
        "error_to_string eval_error_function aggregate_error_function global_eval_fun "
        "global_parse_float_fun global_parse_int_fun global_proxy_function map_delete map_get "
        "map_has map_set finalization_registry_cleanup_some function_has_instance "
        "function_to_string object_to_string object_value_of_function promise_all "
        "promise_all_settled promise_any promise_function range_error_function "
        "reference_error_function set_add set_delete set_has - - syntax_error_function "
        "type_error_function uri_error_function wasm_compile_error_function "
        "wasm_link_error_function wasm_runtime_error_function weakmap_set weakmap_get "
        "weakmap_delete weakset_add - retained_maps "),
    (13, 6): (
        "extension global_proxy_object embedder_data - generator_next_internal "
        "async_module_evaluate_internal reflect_apply reflect_construct perform_promise_then "
        "promise_then promise_resolve function_prototype_apply uint8_array_fun int8_array_fun "
        "uint16_array_fun int16_array_fun uint32_array_fun int32_array_fun "
        "biguint64_array_fun bigint64_array_fun uint8_clamped_array_fun float32_array_fun "
        "float64_array_fun float16_array_fun rab_gsab_uint8_array_map rab_gsab_int8_array_map "
        "rab_gsab_uint16_array_map rab_gsab_int16_array_map rab_gsab_uint32_array_map "
        "rab_gsab_int32_array_map rab_gsab_biguint64_array_map rab_gsab_bigint64_array_map "
        "rab_gsab_uint8_clamped_array_map rab_gsab_float32_array_map "
        "rab_gsab_float64_array_map rab_gsab_float16_array_map "
        "abstract_module_source_function abstract_module_source_prototype "
        "accessor_property_descriptor_map - array_buffer_fun array_buffer_map "
        "array_buffer_noinit_fun array_function array_join_stack - "
        "async_from_sync_iterator_map async_function_constructor async_function_object_map "
        "async_generator_function_function bigint_function boolean_function "
        "bound_function_with_constructor_map bound_function_without_constructor_map "
        "call_as_constructor_delegate call_as_function_delegate callsite_function "
        "context_extension_function data_property_descriptor_map data_view_fun date_function "
        "- empty_function - - - extras_binding_object fast_aliased_arguments_map "
        "fast_template_instantiations_cache function_function function_prototype "
        "generator_function_function generator_object_prototype_map "
        "async_generator_object_prototype_map initial_array_iterator_map "
        "initial_array_iterator_prototype initial_array_prototype initial_error_prototype "
        "initial_generator_prototype initial_async_iterator_prototype "
        "initial_async_generator_prototype initial_iterator_prototype - "
        "initial_map_iterator_prototype initial_map_prototype_map initial_object_prototype "
        "initial_set_iterator_prototype initial_set_prototype initial_set_prototype_map "
        "initial_string_iterator_map initial_string_iterator_prototype "
        "initial_string_prototype initial_weakmap_prototype_map initial_weakset_prototype_map "
        "intl_collator_function intl_date_time_format_function intl_display_names_function "
        "intl_duration_format_function intl_number_format_function intl_locale_function "
        "intl_list_format_function intl_plural_rules_function "
        "intl_relative_time_format_function intl_segmenter_function intl_segments_map "
        "intl_segment_data_object_map intl_segment_data_object_wordlike_map "
        "intl_segment_iterator_map iterator_filter_helper_map iterator_map_helper_map "
        "iterator_take_helper_map iterator_drop_helper_map iterator_flatMap_helper_map "
        "iterator_function valid_iterator_wrapper_map iterator_result_map "
        "js_array_packed_smi_elements_map js_array_holey_smi_elements_map "
        "js_array_packed_elements_map js_array_holey_elements_map "
        "js_array_packed_double_elements_map js_array_holey_double_elements_map "
        "js_array_template_literal_object_map js_disposable_stack_function "
        "js_async_disposable_stack_function js_disposable_stack_map js_map_fun js_map_map "
        "js_module_namespace_map js_raw_json_map js_set_fun js_set_map js_weak_map_fun "
        "js_weak_set_fun js_weak_ref_fun js_finalization_registry_fun - - - - - - - - - - "
        "json_object promise_withresolvers_result_map - - - meta_map function_context_map "
        "module_context_map eval_context_map script_context_map await_context_map "
        "block_context_map catch_context_map with_context_map debug_evaluate_context_map "
        "js_rab_gsab_data_view_map map_cache map_key_iterator_map map_key_value_iterator_map "
        "map_value_iterator_map - math_random_state math_random_cache normalized_map_cache "
        "number_function object_function object_function_prototype "
        "object_function_prototype_map - - - - proxy_callable_map proxy_constructor_map "
        "proxy_function proxy_map proxy_revocable_result_map promise_prototype - "
        "regexp_exec_function regexp_function regexp_last_match_info "
        "regexp_match_all_function regexp_match_function regexp_prototype "
        "regexp_prototype_map regexp_replace_function regexp_result_map "
        "regexp_result_with_indices_map regexp_result_indices_map regexp_search_function "
        "regexp_split_function initial_regexp_string_iterator_prototype_map "
        "script_context_table - security_token serialized_objects set_value_iterator_map "
        "set_key_value_iterator_map shared_array_buffer_fun sloppy_arguments_map "
        "slow_aliased_arguments_map strict_arguments_map slow_object_with_null_prototype_map "
        "slow_object_with_object_prototype_map slow_template_instantiations_cache "
        "atomics_waitasync_promises - regexp_species_protector sloppy_function_map "
        "sloppy_function_with_name_map sloppy_function_without_prototype_map "
        "sloppy_function_with_readonly_prototype_map strict_function_map "
        "strict_function_with_name_map strict_function_with_readonly_prototype_map "
        "strict_function_without_prototype_map method_with_name_map async_function_map "
        "async_function_with_name_map generator_function_map generator_function_with_name_map "
        "async_generator_function_map async_generator_function_with_name_map "
        "class_function_map string_function string_function_prototype_map symbol_function - - "
        "wasm_webassembly_object wasm_exported_function_map wasm_tag_constructor "
        "wasm_exception_constructor wasm_global_constructor wasm_instance_constructor "
        "wasm_js_tag wasm_memory_constructor wasm_module_constructor wasm_table_constructor "
        "wasm_suspending_constructor - - - - template_weakmap typed_array_function "
        "typed_array_prototype "
        "array_entries_iterator array_for_each_iterator array_keys_iterator "
        "array_values_iterator error_function error_to_string eval_error_function "
        "aggregate_error_function global_eval_fun global_parse_float_fun global_parse_int_fun "
        "global_proxy_function map_delete map_get map_has map_set function_has_instance "
        "function_to_string object_to_string object_value_of_function promise_all "
        "promise_all_settled promise_any promise_function range_error_function "
        "reference_error_function set_add set_delete set_has - suppressed_error_function "
        "syntax_error_function type_error_function uri_error_function "
        "wasm_compile_error_function wasm_link_error_function wasm_suspend_error_function "
        "wasm_runtime_error_function weakmap_set weakmap_get weakmap_delete weakset_add - "
        "retained_maps "),
    (14, 6): (
        "global_object global_proxy_object embedder_data - generator_next_internal "
        "async_module_evaluate_internal reflect_apply reflect_construct perform_promise_then "
        "promise_then promise_resolve function_prototype_apply uint8_array_fun int8_array_fun "
        "uint16_array_fun int16_array_fun uint32_array_fun int32_array_fun "
        "biguint64_array_fun bigint64_array_fun uint8_clamped_array_fun float32_array_fun "
        "float64_array_fun float16_array_fun rab_gsab_uint8_array_map rab_gsab_int8_array_map "
        "rab_gsab_uint16_array_map rab_gsab_int16_array_map rab_gsab_uint32_array_map "
        "rab_gsab_int32_array_map rab_gsab_biguint64_array_map rab_gsab_bigint64_array_map "
        "rab_gsab_uint8_clamped_array_map rab_gsab_float32_array_map "
        "rab_gsab_float64_array_map rab_gsab_float16_array_map "
        "abstract_module_source_function abstract_module_source_prototype "
        "accessor_property_descriptor_map - array_buffer_fun array_buffer_map "
        "array_buffer_noinit_fun array_function array_join_stack - "
        "async_from_sync_iterator_map async_function_constructor async_function_object_map "
        "async_generator_function_function bigint_function boolean_function "
        "bound_function_with_constructor_map bound_function_without_constructor_map "
        "call_as_constructor_delegate call_as_function_delegate callsite_function "
        "context_extension_function data_property_descriptor_map data_view_fun date_function "
        "- empty_function - - - extras_binding_object fast_aliased_arguments_map "
        "fast_template_instantiations_cache function_function function_prototype "
        "generator_function_function generator_object_prototype_map "
        "async_generator_object_prototype_map initial_array_iterator_map "
        "initial_array_iterator_prototype initial_array_prototype initial_error_prototype "
        "initial_generator_prototype initial_async_iterator_prototype "
        "initial_async_generator_prototype initial_iterator_function "
        "initial_iterator_helper_prototype initial_iterator_prototype - "
        "initial_map_iterator_prototype initial_map_prototype initial_map_prototype_map "
        "initial_object_prototype initial_set_iterator_prototype initial_set_prototype "
        "initial_set_prototype_map initial_string_iterator_map "
        "initial_string_iterator_prototype initial_string_prototype initial_weakmap_prototype "
        "initial_weakmap_prototype_map initial_weakset_prototype_map intl_collator_function "
        "intl_date_time_format_function intl_display_names_function "
        "intl_duration_format_function intl_number_format_function intl_locale_function "
        "intl_list_format_function intl_plural_rules_function "
        "intl_relative_time_format_function intl_segmenter_function intl_segments_map "
        "intl_segment_data_object_map intl_segment_data_object_wordlike_map "
        "intl_segment_iterator_map iterator_filter_helper_map iterator_map_helper_map "
        "iterator_take_helper_map iterator_drop_helper_map iterator_flatMap_helper_map "
        "iterator_concat_helper_map iterator_function valid_iterator_wrapper_map "
        "iterator_result_map js_array_packed_smi_elements_map js_array_holey_smi_elements_map "
        "js_array_packed_elements_map js_array_holey_elements_map "
        "js_array_packed_double_elements_map js_array_holey_double_elements_map "
        "js_array_template_literal_object_map js_disposable_stack_function "
        "js_async_disposable_stack_function js_disposable_stack_map js_map_fun js_map_map "
        "js_module_namespace_map js_deferred_module_namespace_map js_raw_json_map js_set_fun "
        "js_set_map js_weak_map_fun js_weak_set_fun js_weak_ref_fun "
        "js_finalization_registry_fun - - - - - - - - - json_object "
        "promise_withresolvers_result_map - meta_map function_context_map module_context_map "
        "eval_context_map script_context_map await_context_map block_context_map "
        "catch_context_map with_context_map debug_evaluate_context_map "
        "js_rab_gsab_data_view_map map_cache map_key_iterator_map map_key_value_iterator_map "
        "map_value_iterator_map - math_random_state math_random_cache normalized_map_cache "
        "number_function object_function object_function_prototype "
        "object_function_prototype_map - - - - proxy_callable_map proxy_constructor_map "
        "proxy_function proxy_map proxy_revocable_result_map promise_prototype - "
        "regexp_exec_function regexp_function regexp_last_match_info "
        "regexp_match_all_function regexp_match_function regexp_prototype "
        "regexp_prototype_map regexp_replace_function regexp_result_map "
        "regexp_result_with_indices_map regexp_result_indices_map regexp_search_function "
        "regexp_split_function initial_regexp_string_iterator_prototype_map "
        "script_context_table - security_token serialized_objects set_value_iterator_map "
        "set_key_value_iterator_map shared_array_buffer_fun sloppy_arguments_map "
        "slow_aliased_arguments_map strict_arguments_map slow_object_with_null_prototype_map "
        "slow_object_with_object_prototype_map slow_template_instantiations_cache "
        "atomics_waitasync_promises set_unit8_array_result_map - "
        "initial_array_prototype_validity_cell sloppy_function_map "
        "sloppy_function_with_name_map sloppy_function_without_prototype_map "
        "sloppy_function_with_readonly_prototype_map strict_function_map "
        "strict_function_with_name_map strict_function_with_readonly_prototype_map "
        "strict_function_without_prototype_map method_with_name_map async_function_map "
        "async_function_with_name_map generator_function_map generator_function_with_name_map "
        "async_generator_function_map async_generator_function_with_name_map "
        "class_function_map string_function string_function_prototype_map symbol_function - - "
        "wasm_webassembly_object wasm_exported_function_map wasm_tag_constructor "
        "wasm_exception_constructor wasm_global_constructor wasm_instance_constructor "
        "wasm_js_tag wasm_memory_constructor wasm_module_constructor wasm_table_constructor "
        "wasm_suspending_constructor - - - - template_weakmap typed_array_function "
        "typed_array_prototype "
        "array_entries_iterator array_for_each_iterator array_keys_iterator "
        "array_values_iterator error_function error_to_string eval_error_function "
        "aggregate_error_function global_eval_fun global_parse_float_fun global_parse_int_fun "
        "global_proxy_function map_delete map_get map_has map_set function_has_instance "
        "function_to_string object_to_string object_value_of_function promise_all "
        "promise_all_settled promise_any promise_function range_error_function "
        "reference_error_function set_add set_delete set_has - suppressed_error_function "
        "syntax_error_function type_error_function uri_error_function "
        "wasm_compile_error_function wasm_link_error_function wasm_suspend_error_function "
        "wasm_runtime_error_function weakmap_set weakmap_get weakmap_delete weakset_add - "
        "retained_maps "),
}


def script_context_table_is_array(version: tuple[int, ...]) -> bool:
    """Whether V8 `version`'s ScriptContextTable is one of its FixedArrays,
    which its snapshot files as an `array` (10.2, 11.3); from 12.4 it is a
    class of its own, `hidden / system / ScriptContextTable` (read from V8's
    snapshots of the pinned lines; a line between takes the older rule)."""
    return (version[0], version[1]) < (12, 4)


# The native context's weak slots V8's snapshot names (`weak` edges) after
# NATIVE_CONTEXT_FIELDS: to 10.2 its lists of optimized and deoptimized
# code (held in V8's file of the TypeScript core on 18); gone in 11.3.
_NATIVE_CONTEXT_WEAK = {(10, 2): {268: "optimized_code_list", 269: "deoptimized_code_list"},
                        (11, 3): {}}


def native_context_weak_slots(version: tuple[int, ...]) -> dict[int, str]:
    """Slot index -> V8's name of a native context's weak slots V8 names."""
    return _older(_NATIVE_CONTEXT_WEAK, version) or {}


def native_context_slot_names(version: tuple[int, ...]) -> dict[int, str]:
    """Slot index -> V8's name of a native context's slots, for the lines
    measured ({} for another: its slots stay numbered)."""
    text = _NATIVE_CONTEXT_SLOTS.get((version[0], version[1]), "")
    return {2 + i: n for i, n in enumerate(text.split()) if n != "-"}


# -- GC roots ------------------------------------------------------------------------------
# The sub-roots of `(GC roots)` in V8's heap snapshots: V8's Root enum
# (visitors.h ROOT_ID_LIST) by the names the snapshot gives them, in the
# order the snapshot writes them (one node each, empty ones too). 11 added
# traced handles; 11.8 sorted the list by the enum's names, split the roots
# table (`(Strong root list)`) from the strong roots list, dropped
# `(Unknown)` and the rest; 12 added the shared struct type registry and
# weak roots, 14.6 the identity map. Read from V8's own snapshots of
# 18.0.0, 18.20.8, 19.0.0, 19.8.1, 20.20.2, 21.7.3, 22.23.3, 23.11.1,
# 24.21.0, 25.9.0 and 26.10.0; a newer line takes the newest list.
_ROOTS_10 = ["(Internalized strings)", "(External strings)", "(Read-only roots)",
             "(Strong roots)", "(Smi roots)", "(Bootstrapper)", "(Stack roots)",
             "(Relocatable)", "(Debugger)", "(Compilation cache)", "(Handle scope)",
             "(Builtins)", "(Global handles)", "(Eternal handles)", "(Thread manager)",
             "(Strong roots)", "(Extensions)", "(Code flusher)", "(Startup object cache)",
             "(Read-only object cache)", "(Shareable object cache)", "(Weak collections)",
             "(Wrapper tracing)", "(Write barrier)", "(Retain maps)", "(Client heap)",
             "(Unknown)"]
_ROOTS_11 = _ROOTS_10[:13] + ["(Traced handles)"] + _ROOTS_10[13:]
_ROOTS_11_8 = ["(Bootstrapper)", "(Builtins)", "(Client heap)", "(Code flusher)",
               "(Compilation cache)", "(Debugger)", "(Extensions)", "(Eternal handles)",
               "(External strings)", "(Global handles)", "(Handle scope)", "(Micro tasks)",
               "(Read-only roots)", "(Relocatable)", "(Retain maps)",
               "(Shareable object cache)", "(Smi roots)", "(Stack roots)",
               "(Startup object cache)", "(Internalized strings)", "(Strong root list)",
               "(Strong roots)", "(Thread manager)", "(Traced handles)", "(Write barrier)"]
_ROOTS_12 = ["(Bootstrapper)", "(Builtins)", "(Client heap)", "(Code flusher)",
             "(Compilation cache)", "(Debugger)", "(Extensions)", "(Eternal handles)",
             "(External strings)", "(Global handles)", "(Handle scope)", "(Micro tasks)",
             "(Read-only roots)", "(Relocatable)", "(Retain maps)", "(Shareable object cache)",
             "(SharedStruct type registry)", "(Smi roots)", "(Stack roots)",
             "(Startup object cache)", "(Internalized strings)", "(Strong root list)",
             "(Strong roots)", "(Thread manager)", "(Traced handles)", "(Weak roots)",
             "(Write barrier)"]
_ROOTS_14 = _ROOTS_12[:11] + ["(Identity map)"] + _ROOTS_12[11:]
_GC_ROOT_NAMES = {(10, 1): _ROOTS_10, (11, 0): _ROOTS_11, (11, 8): _ROOTS_11_8,
                  (12, 4): _ROOTS_12, (14, 6): _ROOTS_14}

# Where the Isolate holds the roots V8 visits first, measured in cores of the
# releases named above (each checked at run time, see heap/roots.py):
# - its RootsTable: (byte offset in the Isolate, index of `undefined` in it,
#   read-only roots, strong mutable roots after them; Smi roots follow); the
#   counts are those of V8's snapshot's `(Read-only roots)` and
#   `(Strong roots)` / `(Strong root list)` edges;
# - its builtins tables: (offset, count) of the tier-0 table and of the main
#   one, each word a builtin's Code object (`(Builtins)`: both together).
#   The main table's offset moves within a line (found by the tier-0
#   builtins it begins with); the counts and the tier-0 offset do not (seen
#   in the first, a middle and the last release of each pinned line).
_ROOTS_TABLE = {(10, 1): (288, 4, 695, 78), (10, 2): (288, 4, 697, 81),
                (10, 7): (248, 4, 707, 84), (10, 8): (248, 4, 721, 86),
                (11, 3): (496, 4, 739, 85), (11, 8): (576, 4, 752, 87),
                (12, 4): (592, 4, 760, 96), (12, 9): (584, 4, 767, 101),
                (13, 6): (640, 4, 1028, 104), (14, 1): (648, 0, 1042, 100),
                (14, 6): (688, 0, 1049, 99)}
_BUILTINS_TABLES = {(10, 1): ((144, 10), (34160, 2055)), (10, 2): ((144, 10), (34232, 2054)),
                    (10, 7): ((128, 7), (35296, 2129)), (10, 8): ((128, 7), (35592, 2135)),
                    (11, 3): ((128, 7), (36472, 2182)), (11, 8): ((136, 7), (37464, 2243)),
                    (12, 4): ((136, 7), (38536, 2304)), (12, 9): ((136, 7), (39224, 2333)),
                    (13, 6): ((144, 7), (42224, 2384)), (14, 1): ((144, 7), (38168, 2141)),
                    (14, 6): ((144, 7), (42904, 2415))}


# The other lists V8 visits as roots, measured in cores of the pinned lines
# (10.2, 11.3, 12.4, 13.6, 14.6; a line between takes the older one's):
# - the ThreadLocalTop's tagged fields visited with the stack besides the
#   exception and message: context_ (and topmost_script_having_context_
#   from 12): byte offsets in it;
# - the CompilationCache the Isolate points to: the offsets of its
#   sub-caches' isolate_ back pointers (how it is recognised) and of their
#   tables, `(Compilation cache)`: script, eval global, eval contextual,
#   then the two RegExp generations (10.1-10.2: each sub-cache has a vtable
#   and a generation count first);
# - the Bootstrapper, pointed to two words before the CompilationCache:
#   the offset of its extensions cache's FixedArray, `(Extensions)`;
# - a MicrotaskQueue (after its vtable): size_, capacity_, start_,
#   ring_buffer_, then next_ and prev_, the ring of every queue of the
#   isolate that V8 visits from the default one;
# - the string table's Data (StringTable's data_ first): element count
#   (32 bits), capacity (32 bits, a power of two), the elements (tagged
#   strings; Smi 0 empty, Smi 1 deleted).
_TOP_CONTEXTS = {(10, 1): (16,), (12, 0): (16, 24)}
_COMPILATION_CACHE = {(10, 1): ((16, 56, 96, 136), (32, 72, 112, 152, 160)),
                      (10, 7): ((8, 24, 40, 56), (16, 32, 48, 64, 72))}
BOOTSTRAPPER_BEFORE_CACHE = 16
EXTENSIONS_CACHE = 24
MICROTASK_QUEUE = {"size": 8, "capacity": 16, "start": 24, "ring": 32, "next": 48, "prev": 56}
STRING_TABLE = {"data": 0, "count": 8, "capacity": 16, "elements": 24}
# V8's global handles (handles/global-handles.cc): a node is its object,
# class id (16 bits), index in its block (8), flags (8, the state in the
# low 3), then a parameter and a weak callback: 32 bytes on every line
# measured. A block is GLOBAL_HANDLE_BLOCK nodes, then next_,
# global_handles_, space_ (globalhandles.py). The GlobalHandles holds
# the Isolate* first, then its NodeSpace pointers at these offsets
# (measured on the cores, each checked by its back-pointer): on 10.2
# regular_nodes_ and traced_nodes_; from 11.x regular_nodes_ only (traced
# handles have their own class there, and their own sub-root).
GLOBAL_HANDLE_BLOCK = 256
_GLOBAL_HANDLES = {(10, 1): (32, (16, 48)), (11, 0): (32, (8,))}


def _older(table: dict, version: tuple[int, ...]):
    key = (version[0], version[1])
    older = [k for k in sorted(table) if k <= key]
    return table[older[-1]] if older else None


def top_contexts(version: tuple[int, ...]) -> tuple[int, ...]:
    """Byte offsets in the ThreadLocalTop of the contexts V8 visits as stack roots."""
    return _older(_TOP_CONTEXTS, version) or ()


def compilation_cache(version: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(offsets of the isolate back pointers, offsets of the tables) in the
    CompilationCache; None for a line before those measured."""
    return _older(_COMPILATION_CACHE, version)


def gc_root_names(version: tuple[int, ...]) -> list[str]:
    """The (GC roots) sub-roots V8 `version`'s heap snapshot writes, in its order."""
    key = (version[0], version[1])
    older = [k for k in sorted(_GC_ROOT_NAMES) if k <= key]
    return list(_GC_ROOT_NAMES[older[-1] if older else min(_GC_ROOT_NAMES)])


def roots_table(version: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(offset, undefined's index, read-only count, strong count) of the
    Isolate's RootsTable, None for a line not measured."""
    return _ROOTS_TABLE.get((version[0], version[1]))


def builtins_tables(version: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(offset, count) of the Isolate's builtin tables, () for a line not measured."""
    return _BUILTINS_TABLES.get((version[0], version[1]), ())


def global_handles(version: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
    """(node size, offsets of the NodeSpace pointers in the GlobalHandles,
    the regular nodes' first); None for a line before those measured."""
    return _older(_GLOBAL_HANDLES, version)
