"""Where a suggestion may end: one table of cursor situations, through the one module that decides it."""

from __future__ import annotations

import pytest

from engine.types import StopReason
from lsp_server.postprocess import PostprocessContext, before_cache
from lsp_server.postprocess.line_mode import (
    skipped_ahead,
    rejoined_as_body,
    rejoined_at_limit,
    rejoined_later,
    cut,
    decide,
    defined_names,
    in_python_function,
    model_ended,
    rejoin_stop_word,
    request_stop_words,
)
from lsp_server.syntax import has_grammar

CURSOR = "║"

# (document with the cursor, language, situation, what a model writes when it goes on past its answer,
#  what is shown when it did not end by itself). With a model that ended by itself the whole text is shown.
SITUATIONS = [
    # code after the cursor on the line: finish the line
    ("x = ║foo\n", "python", "line", "1 + \ny = 2", None),
    ("foo(a, ║)\n", "javascript", "line", "b\nbar()", "b"),
    ('print("x:║", x)\n', "python", "line", ' {}", x)\nprint("y")', " {}"),
    ("foo(║, b)\n", "javascript", "line", "a\nb", None),  # code follows and the model went on: misunderstood
    ("x = ║)\n", "python", "line", "f(1)\ny = 2", "f(1)"),
    # the end of a statement that opens no block
    ("total = 1 + ║\n", "python", "line", "2\nprint(total)", "2"),
    # inside a string or a comment
    ('s = "abc║"\n', "python", "line", 'def"\nx = 1', 'def"'),
    ("# a comment║\n", "python", "line", " more\nx = 1", " more"),
    # an empty line inside a run of code: one statement, with the block it opens
    ("def f():\n    x = 1\n    ║\n    return x\n", "python", "statement", "y = 2\n    z = 3", "y = 2"),
    ("def f():\n    x = 1\n    ║\n    return x\n", "python", "statement",
     "if x:\n        y = 2\n    else:\n        y = 3\n    z = 4", "if x:\n        y = 2\n    else:\n        y = 3"),
    ("function f() {\n  a();\n  ║\n  b();\n}\n", "javascript", "statement",
     "if (x) {\n    c();\n  } else {\n    d();\n  }\n  e();", "if (x) {\n    c();\n  } else {\n    d();\n  }"),
    ("function f() {\n  a();\n  ║\n  b();\n}\n", "javascript", "statement",
     "foo(1,\n    2);\n  e();", "foo(1,\n    2);"),
    ("func f() {\n\ta()\n\t║\n\tb()\n}\n", "go", "statement", "n++\n\tc()", "n++"),
    ("fn f() {\n    a();\n    ║\n    b();\n}\n", "rust", "statement",
     "let v = xs\n        .iter()\n        .count();\n    c();", "let v = xs\n        .iter()\n        .count();"),
    ("def f():\n    x = 1\n\n    ║\n    return x\n", "python", "statement", "y = 2\n    z = 3", "y = 2"),
    # after a header whose body goes on below a blank line: its beginning is missing (a docstring, real-code benchmark)
    ("def f():\n    ║\n\n    return x\n", "python", "statement", '"""Doc."""\n    y = 2', '"""Doc."""'),
    ("if (a) {\n  ║\n\n  b();\n}\n", "javascript", "statement", "c();\n  d();", "c();"),
    # ... whose block already has its body below: the statement ends at its opener (HumanEval single-line)
    ("def f(a):\n    x = 1\n║\n        return x\n", "python", "statement",
     "    if a > x:\n        return a\n    return x", "    if a > x:"),
    ("function f(a) {\n  x();\n  ║\n    return x;\n  }\n}\n", "javascript", "statement",
     "if (a) {\n    return a;\n  }", "if (a) {"),
    # ... and when the first statement is no header, the text goes on to the header within a few lines
    # (HumanEval/39/L10: `p = 1`, then `while p < 2:` above the loop body)
    ("def f(n):\n    f = [0, 1]\n║\n        f.append(f[-1])\n", "python", "statement",
     "    p = 1\n    while p < 2:\n        p += 1\n    return f", "    p = 1\n    while p < 2:"),
    ("def f(n):\n    f = [0, 1]\n║\n        f.append(f[-1])\n", "python", "statement",
     "    p = 1\n    q = 2\n    r = 3\n    s = 4\n    while p:", "    p = 1"),  # no header near: one statement
    ("def f(n):\n    f = [0, 1]\n║\n        f.append(f[-1])\n", "python", "statement",
     "    p = 1\n        g(p)\n    while p:", "    p = 1"),  # a deeper line first: no header search
    ("x = 1\n║\ndef g():\n    pass\n", "python", "statement",
     "def f():\n    return 1\n\ndef h():\n    pass", "def f():\n    return 1"),
    ("if (a) {\n\t\tb();\n\t\t║\n\t\tc();\n}", "c", "statement", "d();\n\t\te();", "d();"),
    # ... in a list: after a comma, the next line at the statement's indentation is the next item (HumanEval)
    ("names = {\n    3: \"Three\",\n    ║\n    9: \"Nine\",\n}\n", "python", "statement",
     '4: "Four",\n    5: "Five",\n}\nx = 1', '4: "Four",\n    5: "Five",'),
    ("names = {\n    3: \"Three\",\n    ║\n    9: \"Nine\",\n}\n", "python", "statement",
     '4: "Four"\n    x = 1', '4: "Four"'),
    # where a block is missing: everything (the scope filter limits it later)
    ("def f():\n    ║\n", "python", "block", "x = 1\n    return x", "x = 1\n    return x"),
    ("def f():\n    x = 1\n    ║\ndef g():\n", "python", "block", "y = 2\n    return y", "y = 2\n    return y"),
    # before a blank line, code at the cursor's indentation below: still inside the run (the real-code benchmark:
    # the last assignment of a paragraph came with three more of the model's)
    ("def f():\n    x = 1\n    ║\n\n    return x\n", "python", "statement", "y = 2\n    z = 3", "y = 2"),
    ("def f():\n    x = 1\n    ║\n\n\n\ndef g():\n", "python", "block", "y = 2\n    z = 3", "y = 2\n    z = 3"),
    ("def f():\n    x = 1\n    ║", "python", "block", "y = 2\n    z = 3", "y = 2\n    z = 3"),
    ("if (a) {\n  ║\n}\n", "javascript", "block", "b();\n  c();", "b();\n  c();"),
    ("def f(a, ║\n", "python", "block", "b):\n    return a + b", "b):\n    return a + b"),
    ("def f():\n    x = 1\n      ║\n    abcd\te\n", "python", "block", "y\nz", "y\nz"),  # a tab after code is no indent
]


def _split(document: str) -> tuple[str, str, str, str]:
    prefix, suffix = document.split(CURSOR)
    line_prefix = prefix.rsplit("\n", 1)[-1]
    return prefix, suffix, line_prefix, suffix.split("\n", 1)[0]


@pytest.mark.parametrize("document,language,mode,text,shown", SITUATIONS)
def test_cursor_situations(document, language, mode, text, shown):
    prefix, suffix, line_prefix, line_rest = _split(document)
    needs_grammar = mode == "line" and not line_rest.strip(" )\"") and "#" not in prefix and '"' not in prefix
    if needs_grammar and not has_grammar(language):
        pytest.skip(f"tree-sitter grammar for {language} is not installed")
    assert decide("auto", language, prefix, suffix, line_prefix, line_rest) == mode
    assert decide("always", language, prefix, suffix, line_prefix, line_rest) == "block"
    assert decide("never", language, prefix, suffix, line_prefix, line_rest) == "line"
    below = next((line for line in suffix.split("\n")[1:] if line.strip()), None)
    assert cut(text, mode, False, line_prefix, line_rest, below) == shown
    assert cut(text, mode, True, line_prefix, line_rest, below) == text
    ctx = PostprocessContext(prefix=prefix, suffix=suffix, language=language, line_mode=mode)
    if shown is None:
        assert before_cache(text, ctx) is None


@pytest.mark.parametrize("mode,sees_suffix,expected", [
    ("line", False, ("\n", "\n    return x.y\n")),     # a prefix-only model's further lines would be cut anyway
    ("line", True, ("\n    return x.y\n",)),           # a FIM model may end a multi-line answer by itself
    ("statement", False, ("\n    return x.y\n",)),
    ("block", True, ("\n    return x.y\n",)),
])
def test_request_stop_words(mode, sees_suffix, expected):
    assert request_stop_words(mode, "\n    return x.y  \n", sees_suffix) == expected


def test_rejoin_word_is_the_next_line_of_code():
    assert rejoin_stop_word("\n\n  return total;\r\n}") == "\n  return total;\n"
    # a line code repeats often (fewer than two words) takes the next line of code with it
    assert rejoin_stop_word("\n\n  b();\r\n\n}") == "\n  b();\n\n}\n"
    assert rejoin_stop_word("\n    @Override\n    public void f() {\n") == "\n    @Override\n    public void f() {\n"
    assert rejoin_stop_word("rest of line\n   \n") is None
    assert request_stop_words("block", "", False) == ()


@pytest.mark.parametrize("reason,word,sees_suffix,expected", [
    (StopReason.END_OF_STREAM, None, True, True),              # a FIM model's end token
    (StopReason.END_SENTINEL, "<|endoftext|>", True, True),    # a FIM model's end sentinel, written as text
    (StopReason.END_OF_STREAM, None, False, False),            # a prefix-only model does not know the hole
    (StopReason.TOKEN_LIMIT, None, True, False),
    (StopReason.STOP_WORD, "\n\n", True, False),
    (StopReason.STOP_WORD, "\n    return x.y\n", False, True),   # any model that reached the code below
])
def test_model_ended(reason, word, sees_suffix, expected):
    assert model_ended(reason, word, sees_suffix, "\n    return x.y\n") is expected


@pytest.mark.parametrize("word,suffix,expected", [
    ("\n\n", "\n\n    return x\n", True),          # the model's blank line is the document's
    ("\n    \n", "\n   \n    return x\n", True),
    ("\n\n", "\n    return x\n", False),            # no blank line below: the model stopped inside the hole
    ("\n# c", "\n\n    return x\n", False),         # not a blank line
])
def test_a_blank_line_where_the_code_below_has_one_ends_the_hole(word, suffix, expected):
    assert model_ended(StopReason.STOP_WORD, word, False, suffix) is expected


def test_a_long_line_below_makes_no_rejoin_word():
    long_line = "    data = [" + ", ".join(str(i) for i in range(200)) + "]"
    assert rejoin_stop_word("\n" + long_line + "\n") is None
    # a short line that takes the next lines with it stops before the long one
    assert rejoin_stop_word("\n    x = 1\n" + long_line + "\n") == "\n    x = 1\n"


@pytest.mark.parametrize("text, line_prefix, suffix, expected", [
    # HumanEval/55: the opener whose body is the code below, then that body and more
    ("        return 0\n    elif n == 1:\n        return 1\n    elif n == 2:", "",
     "\n        return 1\n    return fib(n - 1)\n", "        return 0\n    elif n == 1:"),
    ("x) {\n    return 1;\n  }", "  if (", "\n    return 1;\n  }\n", "x) {"),  # the opener on the cursor line
    # the line above is no opener, or the line is not deeper: a repeat, not the body
    ("        a()\n        return 1\n    x()", "", "\n        return 1\n", None),
    ("    if x:\n    return 1", "", "\n    return 1\n", None),
    ("        return 1\n    y()", "", "\n        return 1\n", None),  # the first line: the echo filters' business
])
def test_rejoined_as_body(text, line_prefix, suffix, expected):
    assert rejoined_as_body(text, line_prefix, suffix) == expected


CHAIN_BELOW = "\n    elif z:\n        c()\n    return total\n"
SWITCH_BELOW = "\n    case 3:\n      c();\n  }\n  return total;\n"


@pytest.mark.parametrize("text, suffix, expected", [
    # the rest of the chain, then a line from further below: the text before it is the hole (HumanEval/81)
    ("        a()\n    elif y:\n        b()\n    return total", CHAIN_BELOW, "        a()\n    elif y:\n        b()"),
    ("      a();\n    case 2:\n      b();\n  return total;", SWITCH_BELOW, "      a();\n    case 2:\n      b();"),
    # (a second statement at the first one's level is the model's own: `a(); break;` is not taken as a chain)
    ("      a();\n      break;\n    case 2:\n      b();\n  return total;", SWITCH_BELOW, None),
    # a statement of the model's own before it got back: not a chain
    ("        a()\n    y = 1\n    return total", CHAIN_BELOW, None),
    ("        a()\n    elif y:\n        b()\n    x = 2\n    return total", CHAIN_BELOW, None),
    # at the item's own depth the line may be a right line that the code below repeats (`if err != nil {`)
    ("    if err != nil {\n        return err\n    }", "\n    x()\n    if err != nil {\n        return err\n", None),
    # a one-word line recurs anywhere; the next line itself is the rejoin stop word's business; too far below
    ("        a()\n    }", "\n    b()\n    }\n", None),
    ("        a()\n    return total", "\n    return total\n", None),
    ("        a()\n    return total", "\n" + "    x = 1\n" * 9 + "    return total\n", None),
    # the code below is deeper than the item's first line: that line's body is already there
    ("    if a:\n    elif b:\n        c()\nreturn total", "\n        d()\n    x = 1\nreturn total\n", None),
])
def test_skipped_ahead(text, suffix, expected):
    assert skipped_ahead(text, suffix) == expected


def test_one_statement_keeps_the_lines_of_a_string_it_opens():
    """A docstring in a `statement` situation is one statement over several lines, not its first line (an
    unterminated string); the statement after it is the next one, cut as usual."""
    text = '"""Get the style.\n\n    Returns:\n        Style.\n    """\n    return self._stack[-1]'
    shown = cut(text, "statement", False, "    ", "", below="    return 1", strings=('"""', "'''"))
    assert shown == '"""Get the style.\n\n    Returns:\n        Style.\n    """'
    # Without the language's delimiters, the first line is all the statement there is.
    assert cut(text, "statement", False, "    ", "", below="    return 1") == '"""Get the style.'


BELOW_ADD = "\n\n\trootCmd.AddCommand(child)\n\tbuf := new(bytes.Buffer)\n"


@pytest.mark.parametrize("text, suffix, expected", [
    # cut off inside the line below (cobra): the text before it is the hole
    ("root := 1\n\tchild := 2\n\trootCmd.AddCommand", BELOW_ADD, "root := 1\n\tchild := 2"),
    ("root := 1\n\trootCmd.AddCommand(child)", BELOW_ADD, "root := 1"),  # the whole line, no line break yet
    # one word is no evidence (`this.`, `}`, `return`), another indentation is another line, nothing before it
    ("root := 1\n\trootCmd", BELOW_ADD, None),
    ("root := 1\n    rootCmd.AddCommand", BELOW_ADD, None),
    ("root := 1\n\trootCmd.AddChild", BELOW_ADD, None),
    ("\n\trootCmd.AddCommand", BELOW_ADD, None),
    ("root := 1", BELOW_ADD, None),
])
def test_rejoined_at_limit(text, suffix, expected):
    assert rejoined_at_limit(text, suffix) == expected
    # only a text a limit cut off: a model that stopped by itself ended that line where it wanted
    assert rejoined_later(text, "\t", suffix, limited=True) == expected
    assert rejoined_later(text, "\t", suffix, limited=False) is None


@pytest.mark.parametrize("text, shown", [
    # a comment goes with the code under it (real-code benchmark: `// emit the previous buffer …` shown alone)
    ("// two\n  c();\n  d();", "// two\n  c();"),
    ("// two\n  // more\n  if (x) {\n    c();\n  }\n  d();", "// two\n  // more\n  if (x) {\n    c();\n  }"),
    ("/**\n   * Two.\n   */\n  c();\n  d();", "/**\n   * Two.\n   */\n  c();"),
    ("/* two */\n  c();\n  d();", "/* two */\n  c();"),
    # comments and no code after them: the first one
    ("// one\n  // two\n  // three", "// one"),
    ("/**\n   * One.\n   */\n  // two", "/**\n   * One.\n   */"),
    # code first: a comment after it starts the next statement, as before
    ("c();\n  // two\n  d();", "c();"),
])
def test_a_statement_of_comments_goes_on_with_the_code_they_introduce(text, shown):
    assert cut(text, "statement", False, "  ", "", below="  b();", comment="//") == shown
    ctx = PostprocessContext(prefix="function f() {\n  a();\n  ", suffix="\n  b();\n}\n", language="javascript",
                             line_mode="statement")
    assert before_cache(text, ctx) == shown


def test_a_python_comment_goes_with_the_statement_under_it():
    text = "# the next one\n    y = 2\n    z = 3"
    assert cut(text, "statement", False, "    ", "", below="    return y", comment="#") == "# the next one\n    y = 2"


def test_without_the_languages_comment_syntax_a_comment_line_is_a_statement_like_any_other():
    assert cut("// two\n  c();\n  d();", "statement", False, "  ", "", below="  b();") == "// two"


@pytest.mark.parametrize("line, assignments, names", [
    ("x := f()", False, {"x"}), ("a, err := f()", False, {"a", "err"}), ("var n = 2", False, {"n"}),
    ("const x = 1;", False, {"x"}), ("let total: number = 0;", False, {"total"}), ("const { a, b: c } = o;", False,
                                                                                  {"a", "c"}),
    ("String action = array.getString(2);", False, {"action"}), ("final List<String> xs = new ArrayList<>();", False,
                                                                 {"xs"}),
    ("int n;", False, {"n"}), ("x = 1", True, {"x"}), ("a, b = pair", True, {"a", "b"}), ("n: int = 0", True, {"n"}),
    # no declaration: a call, a return, an attribute or an element, a comparison, an assignment outside Python
    ("foo(x);", False, set()), ("return x;", False, set()), ("throw new E(x);", False, set()),
    ("self.x = 1", True, set()), ("a[i] = 2", True, set()), ("x == y", True, set()), ("x = 1;", False, set()),
    ("launchUrl = parser.getLaunchUrl();", False, set()),
])
def test_defined_names(line, assignments, names):
    assert defined_names(line, assignments) == names


BRIDGE = ("String action = array.getString(2);\n        String callbackId = array.getString(3);\n"
          "        String r = jsExec(action, callbackId);\n        log(r);")


@pytest.mark.parametrize("text, scope, shown", [
    # the code below never names what the statement defines: its use is missing too (real-code benchmark, cordova)
    (BRIDGE, "\n        return r;\n", BRIDGE.rsplit("\n", 1)[0]),
    # ... at most three statements
    (BRIDGE.replace("(action, callbackId)", "()"), "\n        return r;\n",
     BRIDGE.replace("(action, callbackId)", "()").rsplit("\n", 1)[0]),
    # the code below uses it: one statement, as before
    (BRIDGE, "\n        return jsExec(action);\n", "String action = array.getString(2);"),
    # no definition, or its use comes next
    ("log(1);\n        log(2);", "\n        return r;\n", "log(1);"),
    ("String a = f();\n        log(a);\n        log(2);", "\n        return r;\n", "String a = f();\n        log(a);"),
    # a second declaration of a declared name is a model repeating itself (invalid code): not kept
    ("String url = s.get();\n        String url = url.trim();\n        log(url);", "\n        return r;\n",
     "String url = s.get();"),
    # a deeper or shallower line is no next statement
    ("String a = f();\n    }\n    log(2);", "\n        return r;\n", "String a = f();"),
])
def test_a_definition_goes_on_to_its_use_when_the_code_below_has_none(text, scope, shown):
    assert cut(text, "statement", False, "        ", "", below="        return r;", scope=scope) == shown
    assert cut(text, "statement", False, "        ", "", below="        return r;") == text.split("\n")[0]  # no scope
    ctx = PostprocessContext(prefix="class A {\n    void f() {\n        x();\n        ", suffix=scope + "    }\n}\n",
                             language="java", line_mode="statement")
    assert before_cache(text, ctx) == shown


def test_python_assignments_are_definitions_in_a_function_only():
    text = "total = 0\n        count = 1\n        return total"
    method = "class A:\n    def f(self):\n        x = 1\n        "
    body = "class A:\n    x = 1\n    "
    assert in_python_function(method.split("\n")) and not in_python_function(body.split("\n"))
    assert not in_python_function("x = 1\n".split("\n"))
    suffix = "\n        print(x)\n"
    shown = before_cache(text, PostprocessContext(prefix=method, suffix=suffix, language="python",
                                                  line_mode="statement"))
    assert shown == "total = 0\n        count = 1\n        return total"
    # a class attribute (`self.total` elsewhere): one statement
    class_text = "total = 0\n    count = 1"
    assert before_cache(class_text, PostprocessContext(prefix=body, suffix="\n    y = 2\n", language="python",
                                                       line_mode="statement")) == "total = 0"
