"""Single-line or multi-line? Decided from the syntax at the cursor, with tree-sitter where a grammar is installed.

A multi-line suggestion in the middle of an expression is noise; a single-line one after `def f():` is useless.
Grammars come from single-language wheels (`tree-sitter-python`, …), imported only when first needed, so a missing
wheel just means the indentation fallback is used for that language."""

from __future__ import annotations

import importlib
import logging
import re
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

#: languageId → (module, function returning the grammar).
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "javascriptreact": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "typescriptreact": ("tree_sitter_typescript", "language_tsx"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}

#: Only the end of the prefix and the start of the suffix are parsed: enough to see the enclosing construct,
#: cheap enough for every keystroke.
PREFIX_LINES = 150
SUFFIX_LINES = 30

_OPENERS = (":", "{", "(", "[", "=>", "->", " do", " then", "begin")
_BLOCK_WORDS = ("function", "method", "class", "if", "for", "while", "struct", "impl", "interface", "enum",
                "switch", "match", "try", "with", "trait", "namespace", "arrow", "lambda", "closure", "loop",
                "module", "constructor", "else", "case", "block", "body")
_STATEMENT_SUFFIXES = ("statement", "declaration", "definition", "declarator", "item", "assignment")


@lru_cache(maxsize=None)
def _parser(language_id: str) -> Any | None:
    spec = GRAMMARS.get(language_id)
    if spec is None:
        return None
    try:
        import tree_sitter

        module = importlib.import_module(spec[0])
        return tree_sitter.Parser(tree_sitter.Language(getattr(module, spec[1])()))
    except Exception as exc:  # grammar wheel absent or incompatible: fall back to indentation
        log.info("no tree-sitter grammar for %s (%s); using indentation", language_id, exc)
        return None


def has_grammar(language_id: str) -> bool:
    return _parser(language_id) is not None


def multiline_from_indentation(line_prefix: str) -> bool:
    """Without a grammar: a new line (only indentation before the cursor) or a line that opens a block."""
    stripped = line_prefix.rstrip()
    if not stripped:
        return True
    return stripped.endswith(_OPENERS)


def _is_string_or_comment(node_type: str) -> bool:
    return "comment" in node_type or ("string" in node_type and node_type not in ("string_start",)) \
        or node_type in ("char_literal", "character_literal", "template_string", "raw_string_literal")


def _word_in_type(node_type: str) -> bool:
    parts = re.split(r"[_]", node_type)
    return any(word in parts for word in _BLOCK_WORDS) or node_type.startswith(("function", "method", "class"))


_BLOCK_KEYWORDS = frozenset({
    "def", "class", "if", "elif", "else", "for", "while", "with", "try", "except", "fn", "func", "function", "struct",
    "impl", "trait", "enum", "switch", "match", "loop", "interface", "namespace", "do", "async", "lambda"})


def _error_opens_block(node: Any, cursor_byte: int, source: bytes) -> bool:
    """An unfinished construct parses as ERROR; a block keyword on the cursor's line means a header being typed."""
    line_start = source.rfind(b"\n", 0, cursor_byte) + 1
    return any(child.type in _BLOCK_KEYWORDS and line_start <= child.start_byte < cursor_byte
               for child in node.children)


#: A line that does not start code: inside a comment or a string (`* text`, `// text`, a docstring's quotes), or a
#: closer (`}`, `end`).
_NOT_CODE_START = re.compile(r"\s*(?:[*#]|//|/\*|--|\"\"\"|\'\'\'|[)\]}]|end\b|$)")


def _from_shallowest_code(lines: list[str]) -> list[str]:
    """The window's lines from the first one that starts code at the shallowest indentation of such lines (the
    cursor's line, the last, aside): a window cut at a fixed count of lines may begin inside a docstring or a
    comment, which turns the parse inside out (real-code benchmark: rich's `StyleStack.current`, an empty method
    body after `def …:`, parsed as the inside of a string, so a docstring got one line). The enclosing constructs'
    headers are shallower than the code in them, so the window keeps them where it can. Not for a window that
    begins at the document's start: a module docstring's prose at column 0 would be taken for code there."""
    best, width = 0, None
    for index, line in enumerate(lines[:-1]):
        if _NOT_CODE_START.match(line):
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if width is None or indent < width:
            best, width = index, indent
            if indent == 0:
                break
    return lines[best:]


def multiline_from_syntax(language_id: str, prefix: str, suffix: str) -> bool | None:
    """True/False from the tree at the cursor; None when no grammar is installed for the language.

    Single-line inside a string or comment, and inside a statement that has no block to complete; multi-line on an
    empty line, after a block opener, and inside the header of a block construct (`def f(a, ` → signature + body)."""
    parser = _parser(language_id)
    if parser is None:
        return None
    line_prefix = prefix.rsplit("\n", 1)[-1].rstrip("\r")
    lines = prefix.split("\n")
    # From the document's start the parse is exact; a window cut out of it starts at code (`_from_shallowest_code`).
    head = "\n".join(_from_shallowest_code(lines[-PREFIX_LINES:]) if len(lines) > PREFIX_LINES else lines)
    tail = "\n".join(suffix.split("\n")[:SUFFIX_LINES])
    source = (head + tail).encode("utf-8", "surrogatepass")  # lone surrogates: 3 bytes, as counted below
    cursor_byte = len(head.encode("utf-8", "surrogatepass"))
    try:
        tree = parser.parse(source)
    except Exception as exc:  # never let a parser problem break completion
        log.debug("tree-sitter failed for %s: %s", language_id, exc)
        return None
    # Look at the last character typed on this line: trailing spaces belong to the enclosing node only.
    trimmed = len(head.rstrip(" \t").encode("utf-8", "surrogatepass"))
    probe = max((trimmed if line_prefix.strip() else cursor_byte) - 1, 0)
    node = tree.root_node.descendant_for_byte_range(probe, probe + 1)
    while node is not None:
        node_type = node.type
        strictly_inside = node.start_byte < cursor_byte < node.end_byte or (
            node.start_byte < cursor_byte and node.has_error)
        if _is_string_or_comment(node_type) and strictly_inside:
            return False
        if node_type == "ERROR":
            return _error_opens_block(node, cursor_byte, source) or multiline_from_indentation(line_prefix)
        if node.parent is None:
            break
        if _word_in_type(node_type) and node.type not in ("block", "body"):
            body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
            if body is None or body.start_byte >= cursor_byte or body.end_byte <= body.start_byte + 1:
                return True
            return multiline_from_indentation(line_prefix)
        if node_type.endswith(_STATEMENT_SUFFIXES) and not _word_in_type(node_type):
            return not line_prefix.strip() or multiline_from_indentation(line_prefix)
        node = node.parent
    return multiline_from_indentation(line_prefix)


def parser_for(language_id: str) -> Any | None:
    """The tree-sitter parser of a languageId, or None without its grammar (for filters that parse code)."""
    return _parser(language_id)


#: languageId → a query capturing each `default` label of a switch (`@d`), where a grammar accepts two of them.
DEFAULT_LABEL_QUERIES: dict[str, str] = {
    "java": '(switch_label "default") @d',
    "javascript": "(switch_default) @d", "javascriptreact": "(switch_default) @d",
    "typescript": "(switch_default) @d", "typescriptreact": "(switch_default) @d", "tsx": "(switch_default) @d",
    "go": "(default_case) @d",
    "c": '(case_statement "default") @d', "cpp": '(case_statement "default") @d',
}
_SWITCH_BODIES = frozenset({"switch_block", "switch_body", "expression_switch_statement", "type_switch_statement",
                            "select_statement", "switch_statement"})


@lru_cache(maxsize=None)
def _default_query(language_id: str) -> Any | None:
    parser, source = _parser(language_id), DEFAULT_LABEL_QUERIES.get(language_id)
    if parser is None or source is None:
        return None
    try:
        import tree_sitter

        return tree_sitter.Query(parser.language, source)
    except Exception as exc:  # a grammar version without these node names: no check
        log.info("no default-label query for %s (%s)", language_id, exc)
        return None


def extra_defaults(language_id: str, root: Any, low: int = 0, high: int | None = None) -> int:
    """How many `default` labels between byte offsets `low` and `high` stand in a switch that has another one before
    them (0 without a query for the language)."""
    query = _default_query(language_id)
    if query is None:
        return 0
    import tree_sitter

    seen: set[tuple[int, int]] = set()
    extra = 0
    labels = sorted(tree_sitter.QueryCursor(query).captures(root).get("d", []), key=lambda n: n.start_byte)
    for label in labels:
        node = label.parent
        while node is not None and node.type not in _SWITCH_BODIES:
            node = node.parent
        if node is None:
            continue
        key = (node.start_byte, node.end_byte)
        if key in seen and low <= label.start_byte <= (high if high is not None else label.start_byte):
            extra += 1
        seen.add(key)
    return extra
