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
        "ScopeInfoFlagsOffset": 8,
        "ScopeInfoParamsOffset": 16,
        "ScopeInfoLocalsOffset": 24,
        "ScopeInfoVarsOffset": 32,
        "ScopeInfoPositionsFirst": 0,  # 1: start/end sit before the variable part
        "ScopeInfoMaxInlinedLocals": 75,
    },
    "fields": {
        ("Script", "line_offset"): 24,
        ("Script", "column_offset"): 32,
        ("Script", "id"): 64,
        ("InterpreterData", "bytecode_array"): 8,
    },
}

VERSIONS: dict[tuple[int, int], dict[str, Any]] = {
    (10, 2): {"consts": {
        "DeoptimizationDataInlinedFunctionCountIndex": 1,
        "DeoptimizationDataLiteralArrayIndex": 2,
        "DeoptimizationDataInliningPositionsIndex": 7,
        "CodeKindBaseline": 11,
    }, "fields": {
        ("BytecodeArray", "source_position_table"): 32,
        ("BytecodeArray", "constant_pool"): 16,
        ("BytecodeArray", "parameter_size"): 44,
        ("Code", "deoptimization_data"): 16,
        ("Code", "source_position_table"): 24,
        ("Code", "instruction_start_inline"): 128,
    }},
    (11, 3): {"consts": {}, "fields": {
        ("BytecodeArray", "source_position_table"): 32,
        ("BytecodeArray", "constant_pool"): 16,
        ("BytecodeArray", "parameter_size"): 44,
        ("JSFunction", "code"): 48,
        ("Code", "flags"): 48,
        ("Code", "instruction_start"): 40,
        ("Code", "instruction_size"): 56,
    }},
    (12, 4): {"consts": {}, "fields": {
        ("SharedFunctionInfo", "function_data"): 8,
        ("BytecodeArray", "source_position_table"): 24,
        ("BytecodeArray", "constant_pool"): 40,
        ("BytecodeArray", "parameter_size"): 52,
        ("Code", "deoptimization_data"): 8,
        ("Code", "source_position_table"): 16,
    }},
    (13, 6): {"consts": {
        "ScopeInfoVarsOffset": 48,
        "ScopeInfoPositionsFirst": 1,
    }, "fields": {
        ("SharedFunctionInfo", "function_data"): 8,
        ("BytecodeArray", "source_position_table"): 24,
        ("BytecodeArray", "constant_pool"): 40,
        ("Code", "deoptimization_data"): 8,
        ("Code", "source_position_table"): 16,
    }},
    (14, 6): {"consts": {
        "PositionTableEncoding": 2,
        "ScopeInfoVarsOffset": 48,
        "ScopeInfoPositionsFirst": 1,
    }, "fields": {
        ("SharedFunctionInfo", "function_data"): 8,
        ("BytecodeArray", "source_position_table"): 24,
        ("BytecodeArray", "constant_pool"): 40,
        ("Code", "deoptimization_data"): 8,
        ("Code", "source_position_table"): 16,
    }},
}

SUPPORTED = sorted(VERSIONS)


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
