"""constrain-api: one API for constrained decoding, backends as plugins.

    >>> import constrain_api as ca
    >>> vocab = ca.Vocabulary.from_list([b"a", b"b", b"ab"], eos=...)
    >>> backend = ca.get("naive")
    >>> checker = backend.compile(ca.Regex("(ab)+"), vocab).checker()

See ``docs/architecture.md`` for the layers and the protocol contracts.
"""

from .automata import ByteDFA, LazyDFA, byte_segments, parse_regex, utf8_sequences
from .base import BaseCompiled, MatcherChecker, StateChecker, rejection_reason
from .budget import (
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_SECONDS,
    CompileBudget,
    checkpoint,
    compile_budget,
    current_budget,
    is_budget_error,
)
from .caching import CacheInfo, ContentCache, clear_caches, core_caches
from .compiler import BaseBackend, BaseCompiler, Options
from .errors import (
    BackendNotFound,
    CompileLimitExceeded,
    ConstrainError,
    ConstraintError,
    TokenRejected,
    UnsupportedConstraint,
)
from .first_follow import first_and_follow
from .grammar import GrammarIR, Rule, Terminal, lower_grammar
from .hookspecs import hookimpl
from .jsonschema import lower_json_schema
from .lowering import (
    ContextFree,
    ReducedGrammar,
    Regular,
    dfa_for_predicate,
    lower,
    productive_rules,
)
from .lr import LRTable, Stack, lalr_table
from .masks import (
    SpecialBits,
    TokenMask,
    allocate_bitmask,
    allocate_bitmask_tensor,
    apply_bitmask_,
    bitmask_from_bool,
    bitmask_to_bool,
    bitmask_words,
    pack_row,
    row_view,
    vocab_row,
)
from .protocols import (
    FEATURE_PROPOSE,
    Backend,
    Capabilities,
    Checker,
    Compiled,
    CompileStats,
)
from .registry import (
    BackendInfo,
    PluginError,
    Registry,
    available,
    get,
    plugin_errors,
    plugin_workloads,
    register,
)
from .specs import Choice, Constraint, Grammar, JsonSchema, Regex, Where
from .trie import TokenTrie
from .vocabulary import Vocabulary, llama3_special_tokens
from .workloads import Workload

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_MEMORY_MB",
    "DEFAULT_MAX_SECONDS",
    "FEATURE_PROPOSE",
    "Backend",
    "BackendInfo",
    "BackendNotFound",
    "BaseBackend",
    "BaseCompiled",
    "BaseCompiler",
    "ByteDFA",
    "CacheInfo",
    "Capabilities",
    "Checker",
    "Choice",
    "CompileBudget",
    "CompileLimitExceeded",
    "CompileStats",
    "Compiled",
    "ConstrainError",
    "Constraint",
    "ConstraintError",
    "ContentCache",
    "ContextFree",
    "Grammar",
    "GrammarIR",
    "JsonSchema",
    "LRTable",
    "LazyDFA",
    "MatcherChecker",
    "Options",
    "PluginError",
    "ReducedGrammar",
    "Regex",
    "Registry",
    "Regular",
    "Rule",
    "SpecialBits",
    "Stack",
    "StateChecker",
    "Terminal",
    "TokenMask",
    "TokenRejected",
    "TokenTrie",
    "UnsupportedConstraint",
    "Vocabulary",
    "Where",
    "Workload",
    "allocate_bitmask",
    "allocate_bitmask_tensor",
    "apply_bitmask_",
    "available",
    "bitmask_from_bool",
    "bitmask_to_bool",
    "bitmask_words",
    "byte_segments",
    "checkpoint",
    "clear_caches",
    "compile_budget",
    "core_caches",
    "current_budget",
    "dfa_for_predicate",
    "first_and_follow",
    "get",
    "hookimpl",
    "is_budget_error",
    "lalr_table",
    "llama3_special_tokens",
    "lower",
    "lower_grammar",
    "lower_json_schema",
    "pack_row",
    "parse_regex",
    "plugin_errors",
    "plugin_workloads",
    "productive_rules",
    "register",
    "rejection_reason",
    "row_view",
    "utf8_sequences",
    "vocab_row",
]
