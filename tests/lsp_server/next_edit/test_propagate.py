"""Model-free propagation: which changes are substitutions, and where they are repeated."""

from __future__ import annotations

import pytest

from engine.next_edit.types import EditEvent
from lsp_server.next_edit.lexical import CODE, STRING, regions
from lsp_server.next_edit.propagate import propagate, substitution
from lsp_server.next_edit.propagate.special_cases import _appended_clause


def _next(old: str, new: str, text: str, cursor: int = 0, language: str = "python", **kw) -> tuple[str, str] | None:
    edit = propagate(EditEvent("a.py", 0, old, new), text, cursor, language, **kw)
    return None if edit is None else (text[edit.start:edit.end], edit.text)


def test_a_renamed_name_is_repeated_at_its_next_use_not_in_strings_or_comments():
    text = "def f(total):\n    # count of items\n    print('count')\n    return count + 1\n"
    assert _next("def f(count):\n", "def f(total):\n", text) == ("count", "total")
    edit = propagate(EditEvent("a.py", 0, "def f(count):\n", "def f(total):\n"), text, 0, "python")
    assert edit is not None and text[:edit.start].endswith("return ")


def test_whole_words_only_and_attributes_stay_attributes():
    text = "counter = count_all\nobj.count = 2\ncount = 3\n"
    assert _next("count = 1\n", "total = 1\n", text) == ("count", "total")
    edit = propagate(EditEvent("a.py", 0, "count = 1\n", "total = 1\n"), text, 0, "python")
    assert edit is not None and edit.start == text.index("\ncount = 3") + 1
    assert _next("x = self.size\n", "x = self.length\n", "size = 1\ny = self.size\n") == ("size", "length")


def test_after_the_cursor_first_then_wrapping():
    text = "foo()\nfoo()\n"
    edit = propagate(EditEvent("a.py", 0, "foo = 1\n", "bar = 1\n"), text, 3, "python")
    assert edit is not None and edit.start == 6
    edit = propagate(EditEvent("a.py", 0, "foo = 1\n", "bar = 1\n"), text, 7, "python")
    assert edit is not None and edit.start == 0


def test_a_changed_literal_is_anchored_by_its_name():
    assert _next("sleep(30)\n", "sleep(60)\n", "n = 30\nsleep(30)\n") == ("sleep(30", "sleep(60")
    assert _next("timeout = 30\n", "timeout = 60\n", "retries = 30\n") is None


def test_an_added_argument_is_repeated_at_the_same_call():
    assert _next("process(data)\n", "process(data, verbose=True)\n", "print(data)\nprocess(data)\n") == \
        ("process(data)", "process(data, verbose=True)")
    text = "g(a, b, c)\nf(a, b, c)\n"
    edit = propagate(EditEvent("a.py", 0, "f(a, b, c)\n", "f(a, b)\n"), text, 0, "python")
    assert edit is not None and text[:edit.start] + edit.text + text[edit.end:] == "g(a, b, c)\nf(a, b)\n"


def test_a_quoted_literal_is_replaced_whole():
    assert _next("log('debug')\n", "log('info')\n", "s = 'debug mode'\nlog('debug')\n") == ("'debug'", "'info'")


def test_a_qualifier_put_before_a_name():
    assert _next("return foo\n", "return self.foo\n", "self.foo = 1\nfoo()\n") == ("foo", "self.foo")


@pytest.mark.parametrize("old,new", [
    ("a = 1\n", "a = 1\nb = 2\n"),  # new code
    ("process(data)\n", "process(data, \n"),  # still being typed
    ("f(x)\n", "f(x, g(\n"),  # an unclosed bracket
    ("x = 1\n", "x  =  1\n"),  # whitespace only
    ("", "anything\n"),
])
def test_what_is_not_a_substitution(old: str, new: str):
    assert substitution(old, new, "python") is None


def test_different_changes_together_are_repeated_only_where_they_recur_together():
    old, new = "  foo(1)\n  x(2)\n", "  bar(1)\n  y(2)\n"
    assert _next(old, new, "foo(3)\nx(4)\n") is None
    assert _next(old, new, "z = 0\nfoo(1)\n  x(2)\n") == ("foo(1)\n  x", "bar(1)\n  y")
    # the same text as replacing the whole call (brackets closed on both sides)
    assert _next("v = s.readline()\n", "v = next(s)\n", "w = s.readline()\n") == ("s.readline()", "next(s)")


def test_text_added_at_the_end_of_a_line_is_repeated_at_line_ends():
    old, new = "    yield chunk\n", "    yield chunk  # pragma: no cover\n"
    text = "for chunk in chunks:\n    yield chunk\n"
    assert _next(old, new, text) == ("chunk", "chunk  # pragma: no cover")
    edit = propagate(EditEvent("a.py", 0, old, new), text, 0, "python")
    assert edit is not None and edit.start == text.rindex("chunk")


def test_an_inserted_type_is_anchored_by_the_names_around_it():
    old, new = "    hint: str | None = None,\n", "    hint: Sequence[str] | str | None = None,\n"
    assert _next(old, new, "x: str\n    hint: str | None = self.hint\n") == ("hint: str", "hint: Sequence[str] | str")


def test_a_name_in_a_type_position_is_renamed_in_type_positions():
    old, new = "def copy(self) -> Headers:\n", "def copy(self) -> Self:\n"
    text = "    x = Headers()\n    def __or__(self) -> Headers:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, 0, "python")
    assert edit is not None and edit.start == text.rindex("Headers")


def test_occurrences_on_one_line_and_the_next_are_one_edit():
    text = "a = argv[0] + argv[1]\nb = argv\n\nc = argv\n"
    assert _next("n = len(argv)\n", "n = len(args)\n", text) == ("argv[0] + argv[1]\nb = argv",
                                                                   "args[0] + args[1]\nb = args")


def test_the_same_change_twice_in_a_hunk_is_one_substitution():
    assert _next("  foo(1)\n  foo(2)\n", "  bar(1)\n  bar(2)\n", "foo(3)\n") == ("foo", "bar")


def test_an_edit_inside_a_string_propagates_into_strings_only():
    text = "name = 1\nmsg = 'name is'\n"
    assert _next("x = 'name'\n", "x = 'label'\n", text) is None  # the quoted literal 'name' does not stand there
    assert _next("x = 'the name'\n", "x = 'the label'\n", text) == ("name", "label")
    edit = propagate(EditEvent("a.py", 0, "x = 'the name'\n", "x = 'the label'\n"), text, 0, "python")
    assert edit is not None and edit.start == text.index("name is")


def test_names_only_for_other_files():
    assert _next("sleep(30)\n", "sleep(60)\n", "sleep(30)\n", names_only=True) is None
    assert _next("foo = 1\n", "bar = 1\n", "foo()\n", names_only=True) == ("foo", "bar")


def test_no_occurrence_left_is_no_edit():
    assert _next("foo = 1\n", "bar = 1\n", "bar = 1\nbar()\n") is None


def test_languages_with_other_comment_syntax():
    text = "// count here\nlet x = count;\n"
    edit = propagate(EditEvent("a.js", 0, "let count = 1;\n", "let total = 1;\n"), text, 0, "javascript")
    assert edit is not None and edit.start == text.index("count;")


def test_the_model_window_moves_to_the_next_line_that_keeps_a_removed_name():
    from lsp_server.next_edit.focus import jump_focus

    event = EditEvent("a.py", 0, "def f(count):\n", "def f(total):\n")
    far = "def f(total):\n" + "x = 1\n" * 30 + "print(count)\n"
    assert jump_focus(event, far, 5, lines_below=10) == far.index("print(count)")
    near = "def f(total):\n    y = count\n" + "x = 1\n" * 30 + "print(count)\n"
    assert jump_focus(event, near, 5, lines_below=10) is None  # still inside the cursor's window: stay
    assert jump_focus(event, "def f(total):\n" + "x = 1\n" * 30, 5, lines_below=10) is None
    assert jump_focus(EditEvent("a.py", 0, "a = 1\n", "a = 1\nb = 2\n"), far, 5, lines_below=10) is None


def test_in_comments_a_word_in_the_edited_shape_comes_first():
    old, new = " * @param {Options} opts\n", " * @param {MochaOptions} opts\n"
    text = "/**\n * @param {MochaOptions} opts\n * - Options for Mocha\n * @param {Options} more\n */\n"
    edit = propagate(EditEvent("a.js", 1, old, new), text, 10, "javascript", region="comment")
    assert edit is not None and edit.start == text.index("{Options}") + 1


def test_a_shaped_word_in_a_comment_takes_the_other_uses_on_its_line_along():
    old = " * Use {@link mergeMap} instead: `mergeMap(f)`\n"
    new = " * Use {@link switchMap} instead: `switchMap(f)`\n"
    text = "/**\n * Use {@link mergeMap} instead: `mergeMap(g)`\n */\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, 0, "typescript", region="comment")
    assert edit is not None
    assert text[:edit.start] + edit.text + text[edit.end:] == text.replace("mergeMap", "switchMap")


def test_a_spread_name_is_no_attribute():
    text = "f(a.items)\ng(...items)\n"
    edit = propagate(EditEvent("a.js", 0, "const items = f();\n", "const entries = f();\n"), text, 0, "javascript")
    assert edit is not None and edit.start == text.index("...items") + 3
    assert _next("v = x.count\n", "v = x.total\n", "y = ...count\nz = a?.count\n") == ("count", "total")


def test_only_a_rename_goes_back_above_the_cursor():
    text = "sleep(30)\nx = 1\n"
    assert _next("sleep(30)\n", "sleep(60)\n", text, cursor=len(text)) is None
    assert _next("f(a)\n", "f(a, b)\n", "f(a)\nx = 1\n", cursor=len(text)) is None
    assert _next("foo = 1\n", "bar = 1\n", "foo()\nx = 1\n", cursor=len(text)) == ("foo", "bar")


def test_a_builtin_replaced_by_a_name_of_its_own_is_anchored_by_the_name_before_it():
    old, new = "    handle: number;\n", "    handle: TimerHandle;\n"
    text = "    due: number;\n    handle: number;\n"
    assert _next(old, new, text) == ("handle: number", "handle: TimerHandle")
    assert _next("    return None\n", "    return self.message\n", "x = None\n    return None\n") == \
        ("return None", "return self.message")
    # one literal for another is made everywhere, like a rename
    assert _next("x = null;\n", "x = undefined;\n", "y = null;\n", language="javascript") == ("null", "undefined")


def test_a_changed_parameter_list_is_not_a_call():
    old, new = "  getAdapter: (adapters) => {\n", "  getAdapter: (adapters, config) => {\n"
    text = "  a = isArray(adapters);\n  other: (adapters) => {\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, 0, "javascript")
    assert edit is not None and edit.start == text.index("(adapters) =>")
    assert _next("process(data)\n", "process(data, verbose=True)\n", "y = (data)\nprocess(data)\n") == \
        ("process(data)", "process(data, verbose=True)")


def test_in_comments_the_mention_with_the_edited_ones_neighbours_comes_first_within_a_screenful():
    old, new = " * @param {Options} totalErrors Total errors\n", " * @param {Settings} totalErrors Total errors\n"
    doc = "/**\n * @param {Settings} totalErrors Total errors\n * @returns {Options} The text\n */\n"
    other = "/**\n * @param {Options} totalErrors Total errors\n */\n"
    text = doc + other
    edit = propagate(EditEvent("a.js", 1, old, new), text, text.index("\n * @returns"), "javascript", region="comment")
    assert edit is not None and edit.start == len(doc) + other.index("{Options}") + 1
    far = doc + "x = 1;\n" * 60 + other  # farther than a screenful: the next mention
    edit = propagate(EditEvent("a.js", 1, old, new), far, far.index("\n * @returns"), "javascript", region="comment")
    assert edit is not None and edit.start == far.index("{Options}") + 1


def test_a_change_inside_brackets_is_looked_for_with_its_brackets_closed():
    old, new = "def get(self, type: type[T]) -> T:\n", "def get(self, type: cabc.Callable[[V], T]) -> T:\n"
    assert _next(old, new, "def get(self, default: T, type: type[T]) -> T:\n") == \
        ("type[T]", "cabc.Callable[[V], T]")


def test_lines_rewritten_without_their_block_opener_are_repeated_where_they_recur():
    old = "    size = sizeof(uv);\n    if (sysctl(mib, &uv, &size) < 0) {\n        fail(mib);\n"
    new = "    if (checked_sysctl(mib, &uv, sizeof(uv)) != 0)\n"
    text = "void f(void) {\n" + old + "        return;\n    }\n}\n"
    edit = propagate(EditEvent("a.c", 0, old, new), text, 0, "c")
    assert edit is not None
    assert text[:edit.start] + edit.text + text[edit.end:] == text.replace(old, new)
    assert substitution("    f(a, b) {\n", "    f(a, b) {{\n", "c") is None  # an opener added: still typing


def test_a_renamed_code_name_is_renamed_in_the_comments_that_mention_it():
    text = "#ifdef HAS_CPU_AFFINITY\nint x;\n#endif  // PSUTIL_HAVE_CPU_AFFINITY\n"
    edit = propagate(EditEvent("a.c", 0, "#ifdef PSUTIL_HAVE_CPU_AFFINITY\n", "#ifdef PSUTIL_HAS_CPU_AFFINITY\n"),
                     text, 0, "c")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == \
        ("PSUTIL_HAVE_CPU_AFFINITY", "PSUTIL_HAS_CPU_AFFINITY")
    assert _next("maxRetries = 3\n", "retryLimit = 3\n", "# maxRetries: how often\n") == ("maxRetries", "retryLimit")
    assert _next("count = 3\n", "total = 3\n", "# count: how often\n") is None  # a word prose uses too


def test_in_comments_the_next_line_joins_only_when_the_users_edit_spanned_lines():
    text = "/**\n * emits an Observable\n * from the source Observable\n */\n"
    one = propagate(EditEvent("a.ts", 0, " * a Observable here\n", " * a `ObservableInput` here\n"), text, 0,
                    "typescript", region="comment")
    assert one is not None and text[one.start:one.end] == "Observable"
    two = propagate(EditEvent("a.ts", 0, " * a Observable\n * b Observable\n", " * a Input\n * b Input\n"), text, 0,
                    "typescript", region="comment")
    assert two is not None and text[two.start:two.end] == "Observable\n * from the source Observable"


def test_any_type_position_holds_a_type_renamed_in_one():
    text = "y = List()\ndef f() -> List[str]:\n"
    edit = propagate(EditEvent("a.py", 0, "    x: List[str]\n", "    x: list[str]\n"), text, 0, "python")
    assert edit is not None and edit.start == text.index("-> List") + 3


def test_occurrences_on_a_run_of_lines_are_one_edit():
    text = "def f(\n    a: List[str],\n    b: List[str],\n    c: List[str],\n\n    d: List[str],\n"
    edit = propagate(EditEvent("a.py", 0, "    x: List[str]\n", "    x: list[str]\n"), text, 0, "python")
    assert edit is not None
    assert text[:edit.start] + edit.text + text[edit.end:] == text.replace("List", "list", 3)
    long = "".join(f"    a{i}: List[str],\n" for i in range(12))
    edit = propagate(EditEvent("a.py", 0, "    x: List[str]\n", "    x: list[str]\n"), long, 0, "python")
    assert edit is not None and long[edit.start:edit.end].count("\n") == 7  # 8 lines, no more


def test_a_template_literals_substitutions_are_code():
    text = "log(`count: ${count}`);\n"
    edit = propagate(EditEvent("a.js", 0, "let count = 1;\n", "let total = 1;\n"), text, 0, "javascript")
    assert edit is not None and edit.start == text.index("{count}") + 1
    from lsp_server.next_edit.lexical import CODE, STRING, regions
    lexed = regions("x = `a ${f({b: 1})} c`;", "javascript")
    assert [lexed.kind_at(i) for i in (5, 9, 12, 20)] == [STRING, CODE, CODE, STRING]


def test_a_request_lexes_its_text_once_and_only_when_the_old_text_stands_there(monkeypatch):
    import lsp_server.next_edit.propagate.same_role as module

    calls = []
    real = module.regions
    monkeypatch.setattr(module, "regions", lambda text, language: calls.append(len(text)) or real(text, language))
    event = EditEvent("a.py", 0, "count = 1\n", "total = 1\n")
    assert propagate(event, "total = 1\nx = 2\n", 0, "python", edit_at=0) is None
    assert calls == []  # `count` stands nowhere: nothing to lex
    text = "total = 1\ny = count\nz = count + count\n"
    assert propagate(event, text, 0, "python", edit_at=0) is not None
    assert calls == [len(text)]  # the edit's own region and every occurrence's from one pass


def test_an_argument_appended_at_several_calls_of_a_hunk_is_anchored_by_the_name_before_it():
    old = "def inc(release, identifier):\n    self.inc('pre', identifier)\n"
    new = "def inc(release, identifier, base):\n    self.inc('pre', identifier, base)\n"
    assert _next(old, new, "    self.inc('patch', identifier)\n") == ("identifier)", "identifier, base)")
    # made once, it is anchored by the whole call
    assert _next("    self.inc('pre', identifier)\n", "    self.inc('pre', identifier, base)\n",
                 "    self.inc('patch', identifier)\n") is None


def test_a_variable_that_shadowed_a_builtin_is_renamed_like_any_other():
    assert _next("def f(list):\n", "def f(items):\n", "    return list\n") == ("list", "items")
    # a built-in used as a type is changed at its place
    assert _next("    x: list\n", "    x: Sequence\n", "y = list()\n    x: list\n") == ("x: list", "x: Sequence")
    assert _next(" * @type {Map<string, number>}\n", " * @type {Map<string, Count>}\n", " * n: number\n",
                 language="javascript", region="comment") is None


def test_a_parameter_appended_to_a_parameter_list_is_passed_on_where_the_last_one_is():
    text = "  inc (release, identifier, identifierBase) {\n    this.inc('pre', identifier)\n"
    assert _next("  inc (release, identifier) {\n", "  inc (release, identifier, identifierBase) {\n", text,
                 cursor=10, language="javascript") == ("identifier)", "identifier, identifierBase)")
    # a call's argument list is no parameter list: its appended argument stays anchored by the whole call
    assert _next("  inc(release, identifier)\n", "  inc(release, identifier, base)\n",
                 "  inc(release, identifier, base)\n  other(identifier)\n", cursor=10, language="javascript") is None
    # nor is an appended parameter that is no plain name (a default, a type)
    assert _next("  inc (release, identifier) {\n", "  inc (release, identifier, n = 1) {\n",
                 "  inc (release, identifier, n = 1) {\n  f(identifier)\n", cursor=10, language="javascript") is None


def test_a_call_rewritten_over_five_lines_is_repeated_where_it_recurs_verbatim():
    old = "        return fixer.insertTextAfter(\n            lastToken(\n                node,\n" \
          "                parent,\n            ),\n"
    new = "        return appendArguments(\n            fixer,\n            parent,\n"
    text = new + "        other()\n" + old
    assert _next(old, new, text, cursor=10, language="javascript") == (old.strip()[len("return "):].rstrip(),
                                                                       new.strip()[len("return "):].rstrip())


def test_a_changed_version_is_made_wherever_it_stands_whatever_the_region():
    text = "//! version : 0.5.44\nvar VERSION = '0.5.43',\n  other = '0.5.430';\n"
    assert _next("//! version : 0.5.43\n", "//! version : 0.5.44\n", text, cursor=20, language="javascript") == \
        ("0.5.43", "0.5.44")
    # a number with fewer parts is no version: anchored by its name as before
    assert _next("//! scale : 1.5\n", "//! scale : 2.5\n", "//! scale : 2.5\nx = 1.5\n", cursor=16,
                 language="javascript") is None


def test_text_added_before_the_punctuation_that_ends_a_line_is_repeated_before_it():
    # the return annotation goes between `)` and the `:` that ends the line: anchored by both
    text = "    def isatty(self) -> t.Literal[True]:\n        return True\n\n    def readable(self):\n"
    assert _next("    def isatty(self):\n", "    def isatty(self) -> t.Literal[True]:\n", text, cursor=30) == \
        ("self):", "self) -> t.Literal[True]:")
    # ... and only where that punctuation ends the line
    assert _next("    def isatty(self):\n", "    def isatty(self) -> bool:\n",
                 "    def isatty(self) -> bool:\n    f(self): g\n", cursor=30) is None


def test_words_appended_after_a_line_end_word_are_not_appended_again_after_themselves():
    # `file` -> `file changed file`: the old word ends the new text too, so the just-edited line still "ends in
    # file"; that is the user's own edit, not a place to repeat it
    before = "/**\n * @param {string} file\n */\n"
    after = "/**\n * @param {string} file changed file\n */\n"
    event = EditEvent("a.js", 0, before, after)
    assert propagate(event, after + "x = 1;\n", after.index("changed file") + 12, "javascript") is None
    # another doc comment's line that ends in the word still gets it
    text = after + "/**\n * @param {string} file\n */\n"
    edit = propagate(event, text, after.index("changed file") + 12, "javascript")
    assert edit is not None and edit.start > len(after)


def test_a_wrapped_operand_is_not_wrapped_where_the_operand_goes_on():
    # `typeof x` -> `_typeof(x)` wraps the operand `x`; in `typeof x[key]` the operand is `x[key]`
    event = EditEvent("a.js", 0, "if (typeof x === 'a') {}\n", "if (_typeof(x) === 'a') {}\n")
    text = "if (_typeof(x) === 'a') {}\nif (typeof x[key] === 's') {}\n"
    assert propagate(event, text, 14, "javascript") is None
    text = "if (_typeof(x) === 'a') {}\nif (typeof x === 's') {}\n"
    edit = propagate(event, text, 14, "javascript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("typeof x", "_typeof(x)")
    # a property that becomes a call wraps nothing: where the property goes on, the call does
    event = EditEvent("a.js", 0, "n = a.length;\n", "n = a.count();\n")
    text = "n = a.count();\nm = a.length.toFixed(2);\n"
    edit = propagate(event, text, 14, "javascript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("length", "count()")
    # a dotted operand is wrapped whole too
    event = EditEvent("a.js", 0, "if (typeof o.a === 'x') {}\n", "if (_typeof(o.a) === 'x') {}\n")
    text = "if (_typeof(o.a) === 'x') {}\nif (typeof o.a[k] === 'y') {}\n"
    assert propagate(event, text, 16, "javascript") is None


def test_keywords_are_the_languages_own():
    # Python's `type` is a built-in name (a soft keyword at most): typing's `Type` replaced by it is a rename there
    assert _next("    x: Type[Any]\n", "    x: type[Any]\n", "def f(y: Type[Any]):\n") == ("Type", "type")
    # TypeScript reserves `type`: there the same change is no rename
    assert _next("  x: Type;\n", "  x: type;\n", "  y: Type;\n", language="typescript") is None
    # a Python keyword stays one
    assert _next("    from_ = 1\n", "    from = 1\n", "    from_ = 2\n") is None


def test_a_builtin_alone_on_its_line_is_a_type_not_a_variable():
    # `new Map<\n  number,\n  {...}>`: the parameter's line holds no other word; `number` elsewhere is not renamed
    text = "    {\n        due: number;\n        handle: number;\n"
    assert _next("      number,\n", "      TimerHandle,\n", text, language="typescript") is None
    # a variable that shadowed a built-in, on a line that shows it, is still renamed
    assert _next("def f(list):\n", "def f(items):\n", "    return list\n") == ("list", "items")


def test_statements_replaced_over_lines_by_one_are_repeated_where_they_recur_verbatim():
    old, new = "    Py_INCREF(Py_None);\n    return Py_None;\n", "    Py_RETURN_NONE;\n"
    text = "    return Py_None;\n}\n\nstatic PyObject *g(void) {\n    Py_INCREF(Py_None);\n    return Py_None;\n}\n"
    assert _next(old, new, text, language="c") == ("Py_INCREF(Py_None);\n    return Py_None", "Py_RETURN_NONE")
    # one name over lines is no anchor
    assert _next("    x =\n        1;\n", "    x = 2;\n", "    x =\n        1;\n", language="c") is None


def test_a_quoted_literal_replaced_by_a_constant_is_replaced_where_it_stands_in_code():
    old = '    im = ImagingNewDirty("L", xsize, ysize);\n'
    new = "    im = ImagingNewDirty(IMAGING_MODE_L, xsize, ysize);\n"
    text = '    /* mode "L" */\n    s = "mode \\"L\\"";\n    out = ImagingNewDirty("L", xsize, ysize);\n'
    assert _next(old, new, text, language="c", edit_at=0) == ('"L"', "IMAGING_MODE_L")
    edit = propagate(EditEvent("a.c", 0, old, new), text, 0, "c", edit_at=0)
    assert edit is not None and text[:edit.start].endswith("ImagingNewDirty(")
    # the same slot only: a comparison with the value is rewritten otherwise (`strcmp(m, "L") == 0` → `m == ...`)
    assert _next(old, new, '    if (strcmp(mode, "L") == 0) {\n', language="c", edit_at=0) is None


def test_a_type_changed_in_a_declaration_is_anchored_by_the_declared_name():
    old = "ImagingNewPrologue(const char *mode, int xsize) {\n"
    new = "ImagingNewPrologue(const ModeID mode, int xsize) {\n"
    text = "    const char *name = NULL;\n    char *mode;\n"
    assert _next(old, new, text, language="c") == ("char *mode", "ModeID mode")


def test_a_quoted_literal_replaced_by_a_constant_anchors_itself_in_its_slot():
    old, new = '    CHOP2(in1[x] ? 255 : 0, "1");\n', "    CHOP2(in1[x] ? 255 : 0, IMAGING_MODE_1);\n"
    text = '    if (strcmp(mode, "1") == 0) {}\n    CHOP2(in2[x] ? 255 : 0, "1");\n'
    edit = propagate(EditEvent("a.c", 0, old, new), text, 0, "c", edit_at=0)
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ('"1"', "IMAGING_MODE_1")
    assert text[:edit.start].endswith("255 : 0, ")


def test_a_name_wrapped_in_a_generic_is_wrapped_where_it_is_a_type_argument():
    old, new = "      true extends IsValues<T>\n", "      true extends IsValues<Exclude<T, null>>\n"
    text = "type IsRecord<T, U> = T\nconst T = 1\n      true extends IsRecord<T, false>\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, 0, "typescript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("T", "Exclude<T, null>")
    assert text[:edit.start].endswith("extends IsRecord<")  # not the declaration's type parameter, nor the value
    # in a JSDoc type too: `{ExportInfo}` → `{InstanceType<ExportInfo>}` where the type is `{ExportInfo}`
    old, new = " * @param {ExportInfo} info\n", " * @param {Array<ExportInfo>} info\n"
    text = "/**\n * ExportInfo of the module\n * @returns {ExportInfo} the info\n */\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, 0, "javascript", region="comment")
    assert edit is not None and text[:edit.start].endswith("@returns {")


def test_a_sentence_finished_with_a_full_stop_is_repeated_in_prose():
    # a final "." ends a sentence in a docstring's inner line (no quote in the hunk) and in a comment, while in code
    # it is an attribute still being typed
    doc = "    :param locale: the locale identifier\n"
    text = doc + "x = 1\n" + doc
    assert _next(doc, "    :param locale: the locale identifier. Defaults to the system locale.\n", text,
                 cursor=len(doc)) == ("identifier", "identifier. Defaults to the system locale.")
    comment = "    y = 1  # unsupported nodes, like subscript\n"
    assert _next(comment, comment.replace("unsupported nodes, like subscript", "Unsupported nodes, like subscript."),
                 comment + comment, cursor=len(comment)) == (
        "unsupported nodes, like subscript", "Unsupported nodes, like subscript.")
    assert _next("return self\n", "return self.\n", "return self\nreturn self\n", cursor=12) is None
    assert _next("x = a\n", "x = a.\n", "x = a\ny = a\n", cursor=6) is None



def test_text_appended_after_a_word_does_not_wrap():
    # only a rename must reach the uses above the cursor: text appended after a word is anchored by the word
    line = "    :param unit: the unit's identifier\n"
    text = line + "x = 1\n"
    assert _next(line, line.replace("identifier", "identifier (optional)"), text, cursor=len(line)) is None
    # a rename to a longer name still wraps
    text = "use(foo)\nbar = 1\n"
    assert _next("foo = 1\n", "food = 1\n", text, cursor=len(text) - 1) == ("foo", "food")


def test_a_word_changed_in_prose_does_not_wrap():
    # in a comment the user picks each mention: none above the cursor must follow
    text = "// the colour of the mask\nf(b)\n"
    assert _next("// a colour\n", "// a color\n", text, cursor=len(text) - 1, language="javascript") is None


def test_a_renamed_one_letter_name_does_not_wrap():
    # a one-letter name belongs to its scope: `e` above the cursor is another function's
    text = "function g(e) { return e; }\ncatch (err) { log(err); }\n"
    assert _next("catch (e) { log(e); }\n", "catch (err) { log(err); }\n", text, cursor=len(text) - 1,
                 language="javascript") is None
    text = "use(foo)\nbar = 1\n"
    assert _next("foo = 1\n", "bar = 1\n", text, cursor=len(text) - 1) == ("foo", "bar")


def test_a_built_in_type_replaced_by_another_is_anchored_by_its_place_a_literal_by_a_literal_is_not():
    # `number` → `bigint` in one field's type is a change of that field's kind of type, not of every `number`
    old, new = "  readonly nlink: Option.Option<number>\n", "  readonly nlink: Option.Option<bigint>\n"
    text = "  mode: number\n  readonly rdev: Option.Option<number>\n"
    assert _next(old, new, text, language="typescript") == ("Option<number", "Option<bigint")
    assert _next("  size: number\n", "  size: bigint\n", "  count: number\n  size: number\n",
                 language="typescript") == ("size: number", "size: bigint")
    # one literal for another (`null` → `undefined`) is a change of style, made everywhere
    assert _next("x = null;\n", "x = undefined;\n", "f(null);\n", language="javascript") == ("null", "undefined")


def test_a_renamed_code_name_is_renamed_in_code_before_the_comments_that_mention_it():
    old, new = "  thread_local = get();\n", "  _thread_local = get();\n"
    text = "/* thread_local.interaction */\nx = f(thread_local);\n/* see thread_local */\n"
    edit = propagate(EditEvent("a.c", 0, old, new), text, 0, "c")
    assert edit is not None and text[:edit.start].endswith("f(")
    # no use left in code: the next mention in a comment, but never one above the cursor
    assert _next(old, new, text, cursor=text.index(");"), language="c") == ("thread_local", "_thread_local")
    edit = propagate(EditEvent("a.c", 0, old, new), text, text.index(");"), "c")
    assert edit is not None and text[:edit.start].endswith("/* see ")
    assert _next(old, new, "/* thread_local.interaction */\n", cursor=30, language="c") is None


def test_an_argument_changed_in_a_call_is_not_repeated_in_a_parameter_list():
    # `controller` → `this.#downstream` in a call: a parameter list cannot take an expression, its next call can
    old, new = "    h.onError?.(controller, err)\n", "    h.onError?.(this.#downstream, err)\n"
    text = "  onError (controller, err) {\n    h.onError?.(controller, err)\n  }\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, 0, "javascript")
    assert edit is not None and text[:edit.start].endswith("h.onError?.(")
    assert _next(old, new, "const f = (controller, err) => {\n", language="javascript") is None
    assert _next("f(a, controller)\n", "f(a, self.controller)\n", "def g(self, controller):\n") is None
    # a rename is made in parameter lists too, and so is a change made in one
    assert _next("f(controller)\n", "f(ctl)\n", "def g(controller):\n") == ("controller", "ctl")
    assert _next("def g(a, controller):\n", "def g(a, self.controller):\n", "def h(a, controller):\n") == (
        "controller", "self.controller")


def test_a_module_qualifier_taken_off_a_name_comes_off_its_other_names():
    old, new = "    app_state: dict[str, typing.Any],\n", "    app_state: dict[str, Any],\n"
    text = "x = 1\nm = typing.cast(Event, m)\n"
    assert _next(old, new, text) == ("typing.", "")
    assert _next(old, new, "x = a.typing.cast(m)\n") is None  # there it is itself qualified
    old = " * @param {import('./types.js').Plugin<P>} plugin\n"
    text = " * @returns {import('./types.js').Config} config\n"
    assert _next(old, old.replace("import('./types.js').", ""), text, language="javascript", region="comment") == (
        "import('./types.js').", "")
    # a receiver is no module: `self.size` → `size` is a change of this place
    assert _next("    n = f(self.size)\n", "    n = f(size)\n", "y = g(self.count)\n") is None


def test_a_built_in_replaced_by_a_literal_is_a_value_set_at_its_place_not_a_rename():
    old, new = "  const P extends boolean = never,\n", "  const P extends boolean = false,\n"
    text = "  const P extends boolean = false, SE = never,\n  const Q extends boolean = never,\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, text.index(", SE"), "typescript")
    assert edit is not None and text[edit.start:edit.end] == "extends boolean = never" and edit.start > text.index("Q")


def test_an_attribute_renamed_on_self_is_renamed_on_self_not_on_other_objects():
    old, new = "        self.data += data\n", "        self._data += data\n"
    text = "        f.data = b''.join(x.data for x in fs)\n        if len(self.data) < 9:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, 0, "python")
    assert edit is not None and text[:edit.start].endswith("len(self.")
    assert _next("this.size = 0;\n", "this.length = 0;\n", "other.size = 1;\n", language="javascript") is None
    # another object's attribute renamed: any object's
    assert _next("n = frame.data\n", "n = frame.payload\n", "m = other.data\n") == ("data", "payload")


def test_a_built_in_call_replaced_by_another_built_in_is_no_rename():
    # `set(x)` → `list(x)` changes one value's kind; `labels: set | None` elsewhere is not the same
    old, new = "    parent.exports = set(node.obj)\n", "    parent.exports = list(node.obj)\n"
    text = "def f(labels: set | None = None):\n    parent.exports = set(node.obj)\n"
    assert _next(old, new, text, cursor=len(text)) is None
    assert _next(old, new, text) == ("exports = set", "exports = list")


def test_a_name_replaced_by_a_literal_is_anchored_by_the_name_before_it():
    old = "def f(locale: Locale | str | None = LC_NUMERIC) -> str:\n"
    new = "def f(locale: Locale | str | None = None) -> str:\n"
    text = "from babel.numbers import LC_NUMERIC, format_decimal\nx = f(LC_NUMERIC)\n"
    assert _next(old, new, text, cursor=len(text)) is None
    assert _next(old, new, text) is None
    assert _next("x = f(timeout=LIMIT)\n", "x = f(timeout=None)\n", "y = LIMIT\ng(timeout=LIMIT)\n") == (
        "timeout=LIMIT", "timeout=None")


def test_a_keyword_replaced_alone_is_no_substitution():
    assert substitution("            raise\n", "            values_to_check = [value]\n", "python") is None
    assert _next("            raise\n", "            values = [v]\n", "    except E:\n        raise\n") is None


def test_a_pattern_changed_in_a_string_is_repeated_where_it_recurs():
    # `(?:.|\n)` → `[\s\S]` in a regular expression: no name to anchor it, but long enough to be no accident
    old, new = "    (r'/\\*(?:.|\\n)*?\\*/', Comment),\n", "    (r'/\\*[\\s\\S]*?\\*/', Comment),\n"
    text = "x = '(?:.|\\n)' and f((a, b))\n    (r'<!--(?:.|\\n)*?-->', Comment),\n"
    assert _next(old, new, text, cursor=5) == ("(?:.|\\n)", "[\\s\\S]")


def test_a_cast_put_before_an_argument_is_repeated_in_the_similar_calls_just_below():
    old = "\t\treturn escape_kind1(s);\n"
    new = "\t\treturn escape_kind1((PyUnicodeObject*) s);\n"
    head = "\tcase 1:\n" + new
    text = head + "\tcase 2:\n\t\treturn escape_kind2(s);\n\t}\n"
    assert _next(old, new, text, len(head) - 3, "c") == ("(s", "((PyUnicodeObject*) s")
    far = head + "\n" * 12 + "\tg(s);\n"
    assert _next(old, new, far, len(head) - 3, "c") is None  # not a run of similar calls: no guess
    assert _next(old, new, head + "\tif (s) {\n", len(head) - 3, "c") is None  # a condition, no call


def test_a_quote_inside_a_javascript_regular_expression_opens_no_string():
    text = "const re = /^[\\w!#$%&'*+.^`|~-]+$/\nconst cache = new Lru(100)\nconst half = a / b / c\n"
    found = regions(text, "javascript")
    assert found.kind_at(text.index("Lru")) == CODE
    assert found.kind_at(text.index("^[")) == STRING
    assert found.kind_at(text.index("b / c")) == CODE  # a division is no regular expression
    assert found.kind_at(text.index("'")) == STRING


def test_a_type_renamed_in_a_jsdoc_comment_is_renamed_next_in_the_code_below():
    old, new = " * @type {Lru<ContentType>}\n", " * @type {Fifo<ContentType>}\n"
    text = "/**\n" + new + " */\nconst cache = new Lru(100)\n\n/**\n * @type {Lru<ContentType>}\n */\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, text.index("Fifo") + 4, "javascript",
                     edit_at=text.index("Fifo"))
    assert edit is not None and text[edit.start - 4:edit.end] == "new Lru" and edit.text == "Fifo"
    # a word renamed in prose (no type braces, no code span) stays in prose
    prose_old, prose_new = " * the Lru cache\n", " * the Fifo cache\n"
    prose = "/**\n" + prose_new + " */\nconst cache = new Lru(100)\n"
    assert propagate(EditEvent("a.js", 0, prose_old, prose_new), prose, prose.index("Fifo") + 4, "javascript",
                     edit_at=prose.index("Fifo")) is None


def test_a_built_in_type_replaced_the_same_way_twice_is_replaced_where_it_stands_as_a_type():
    first = EditEvent("a.py", 3, "        timeout: Optional[float] = None,\n",
                      "        timeout: Optional[Number] = None,\n")
    old, new = "        blocking: Optional[float] = None,\n", "        blocking: Optional[Number] = None,\n"
    text = "def f(\n" + new + "):\n    x = float(y)\n\ndef g(self, extra: float, b: bool):\n"
    assert _next(old, new, text, text.index("):")) is None  # once: a change of its place
    edit = propagate(EditEvent("a.py", 1, old, new), text, text.index("):"), "python", previous=first)
    assert edit is not None and text[edit.start - 7:edit.end] == "extra: float" and edit.text == "Number"
    other = EditEvent("a.py", 3, "        timeout: float = None,\n", "        timeout: int = None,\n")
    assert propagate(EditEvent("a.py", 1, old, new), text, text.index("):"), "python", previous=other) is None


def test_a_method_defined_by_its_name_alone_is_a_property_not_the_renamed_variable():
    old, new = "import { process } from './to-json.js'\n", "import { processSchema } from './to-json.js'\n"
    text = new + "class G {\n  process(schema: T, p = {}): S {\n    return process(schema, this.ctx)\n  }\n}\n"
    assert _next(old, new, text, len(new), "typescript") == ("process", "processSchema")
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new), "typescript")
    assert edit is not None and text[edit.start - 7:edit.start] == "return "
    # a method renamed is renamed where it is called as a property
    m_old, m_new = "  process(schema) {\n", "  run(schema) {\n"
    calls = "class G {\n" + m_new + "  }\n}\nprocess(x)\ng.process(y)\n"
    edit = propagate(EditEvent("a.js", 1, m_old, m_new), calls, len("class G {\n" + m_new), "javascript")
    assert edit is not None and calls[edit.start - 2:edit.end] == "g.process"


def test_a_method_definition_and_its_uses_as_attributes_are_one_role():
    # a method renamed at its `def` is renamed where it is called on an object, not where a bare name stands
    old, new = "    def _alread(self, expr):\n", "    def _already(self, expr):\n"
    text = "class M:\n" + new + "        _alread = 1\n    def f(self):\n        x = self._alread(a)\n"
    edit = propagate(EditEvent("a.py", 1, old, new), text, len("class M:\n" + new), "python")
    assert edit is not None and text[edit.start - 5:edit.end] == "self._alread" and edit.text == "_already"
    # ... and renamed at a use on `self`, its definition is the next place, though it has no receiver
    u_old, u_new = "        if self._alinged:\n", "        if self._aligned:\n"
    text = "class M:\n    def g(self):\n" + u_new + "    def _alinged(cls):\n        pass\n"
    cursor = text.index(u_new) + len(u_new)
    assert _next(u_old, u_new, text, cursor) == ("_alinged", "_aligned")
    js_old, js_new = "    return this.proces(x)\n", "    return this.process(x)\n"
    js = "class G {\n  run(x) {\n" + js_new + "  }\n  proces(x) {\n  }\n}\n"
    assert _next(js_old, js_new, js, js.index(js_new) + len(js_new), "javascript") == ("proces", "process")
    # a function at the top level is no method: its bare uses stay the ones renamed
    f_old, f_new = "def load(self):\n", "def read(self):\n"
    assert _next(f_old, f_new, f_new + "x = load(1)\ny = o.load(2)\n", len(f_new)) == ("load", "read")
    edit = propagate(EditEvent("a.py", 0, f_old, f_new), f_new + "y = o.load(2)\nx = load(1)\n", len(f_new), "python")
    assert edit is not None and edit.start == len(f_new + "y = o.load(2)\nx = ")


def test_a_name_replaced_by_this_is_the_value_at_its_place_not_a_rename():
    old, new = "    return res\n", "    return this\n"
    text = "  add (dest) {\n    const res = this\n    id: ++res.lastId\n" + new + "  },\n  remove (id) {\n" \
        "    const res = this\n    return res\n"
    cursor = text.index(new) + len(new)
    assert _next(old, new, text, cursor, "javascript") == ("return res", "return this")
    assert _next(old, new, text[:cursor] + "    id: ++res.lastId\n", cursor, "javascript") is None


def test_a_name_renamed_bare_and_as_an_attribute_in_one_edit_is_renamed_in_both_roles():
    # a module and the service it exports share a name: both halves of `Crypto.Crypto` are the rename
    old = "type R = SqlClient | Crypto.Crypto\n"
    new = "type R = SqlClient | Digest.Digest\n"
    text = "const layer = make(Crypto.Crypto)\n"
    assert _next(old, new, text, language="typescript") == ("Crypto.Crypto", "Digest.Digest")
    # renamed as an attribute only, it stays an attribute's rename
    assert _next("x = a.size + b.size\n", "x = a.length + b.length\n", "size = 1\ny = c.size\n") == ("size", "length")


def test_a_keyword_that_is_a_built_in_type_is_changed_at_its_place_where_it_stands_as_a_type():
    old, new = "  fiber?: Fiber<void, unknown> | undefined\n", "  fiber?: Fiber<unknown, unknown> | undefined\n"
    text = "function f(): void {}\nlet fiber: Fiber<void, unknown> | undefined\n"
    assert _next(old, new, text, language="typescript") == ("Fiber<void", "Fiber<unknown")
    # where it is the operator, it stays a keyword: nothing to repeat
    assert _next("x = void f();\n", "x = run f();\n", "y = void f();\n", language="javascript") is None


def test_a_built_in_type_argument_of_a_built_in_generic_is_anchored_by_the_generic_and_the_name_after_it():
    old = "  const Layers extends Record<string, Layer.Layer<any>>,\n"
    new = "  const Layers extends Record<PropertyKey, Layer.Layer<any>>,\n"
    text = "function f(x: Record<string, number>) {}\n  readonly layers: Record<string, Layer.Layer<any>>\n"
    assert _next(old, new, text, language="typescript") == ("Record<string, Layer", "Record<PropertyKey, Layer")
    edit = propagate(EditEvent("a.ts", 0, old, new), text, 0, "typescript")
    assert edit is not None and text[:edit.start].endswith("layers: ")


def test_a_changed_value_goes_first_to_the_same_line_repeated_below():
    old, new = "        match: typing.Optional[str] = None,\n", "        match: typing.Union[None, str] = None,\n"
    text = "    def a(\n" + new + "    ):\n\n    def b(\n        message: typing.Optional[str] = None,\n" \
        "        match: typing.Optional[str] = None,\n    ):\n"
    edit = propagate(EditEvent("a.py", 1, old, new), text, len("    def a(\n" + new), "python")
    assert edit is not None and text[:edit.start].endswith("        match: typing.")
    # no such line: the next occurrence, as before
    other = text.replace("        match: typing.Optional[str] = None,\n    ):", "    ):")
    edit = propagate(EditEvent("a.py", 1, old, new), other, len("    def a(\n" + new), "python")
    assert edit is not None and other[:edit.start].endswith("message: typing.")


def test_a_quoted_version_is_a_version_wherever_it_stands_also_as_a_tag():
    old, new = "  version: '3.46.0',\n", "  version: '3.47.0',\n"
    text = "  version: '3.47.0',\n  mode: 'global',\n  license: 'https://example.org/blob/v3.46.0/LICENSE',\n"
    assert _next(old, new, text, cursor=20, language="javascript") == ("3.46.0", "3.47.0")
    # a version inside a longer number or word is none
    assert _next(old, new, "  x = '13.46.0' + 'rev3.46.0'\n", language="javascript") is None


def test_a_template_literal_inside_a_substitution_leaves_the_substitution_code():
    text = 'const d = f ? `[${esc(`Disable ${flag.name}`)}]` : ""\nconst e = esc(x)\n'
    found = regions(text, "typescript")
    assert found.kind_at(text.index("esc(`")) == CODE and found.kind_at(text.index("[")) == STRING
    assert found.kind_at(text.index("const e")) == CODE
    # so a function renamed is renamed there first
    old, new = "const c = `[${esc(a)}]`\n", "const c = `[${escape(a)}]`\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), new + text, len(new), "typescript")
    assert edit is not None and (new + text)[:edit.start].endswith("? `[${")
    # a substitution that does not close stays as before: the literal ends at its next backtick
    assert regions("x = `a ${b` + c\n", "typescript").kind_at(len("x = `a ${b` + ")) == CODE


def test_lines_rewritten_without_a_token_substitution_are_rewritten_where_they_recur_verbatim():
    old = '    ref: { [READ]: { experimental: ["22.14.0"] } },\n'
    new = '    ref: {\n        [READ]: {\n            experimental: ["22.14.0"],\n            supported: ["26"],\n' \
        '        },\n    },\n'
    deeper = '        ref: { [READ]: { experimental: ["22.14.0"] } },\n'  # another statement's
    text = new + deeper + "    x: 1,\n" + old
    edit = propagate(EditEvent("a.js", 0, old, new), text, len(new) - 1, "javascript")
    assert edit is not None and text[edit.start:edit.end] == old.rstrip("\n") and edit.text == new.rstrip("\n")
    # one changed span is a substitution's to repeat or refuse, not a rewrite of lines
    assert propagate(EditEvent("a.py", 0, "    x: str = LC_NUMERIC,\n", "    x: str = None,\n"),
                     "    x: str = None,\n    x: str = LC_NUMERIC,\n", 10, "python") is None
    # lines with fewer than two names recur by accident: nothing
    assert propagate(EditEvent("a.js", 0, "    body,\n", "    storedBody,\n    compressed,\n"),
                     "    storedBody,\n    compressed,\n    body,\n", 20, "javascript") is None
    # an unclosed bracket is still being typed
    assert propagate(EditEvent("a.py", 0, "    run(a, b)\n", "    run(a, b, (\n"), "    run(a, b, (\n    run(a, b)\n",
                     10, "python") is None


def test_a_non_null_asserted_qualifier_taken_off_comes_off_the_other_names():
    old, new = "        parent!.tuple\n", "        tuple\n"
    text = "      const [parentKey, tuple] = parent!\n" + new + "        parent!.parentKey,\n"
    edit = propagate(EditEvent("a.ts", 1, old, new), text, text.index("tuple\n") + 5, "typescript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("parent!.", "")


def test_a_name_renamed_in_a_code_span_with_a_dotted_path_is_renamed_next_in_code():
    old = " * so callers must still provide `SqlClient` and `Crypto.Crypto`\n"
    new = " * so callers must still provide `SqlClient` and `Digest.Digest`\n"
    text = "/**\n" + new + " */\nexport const layer: Layer<SqlClient | Crypto.Crypto> = make\n"
    edit = propagate(EditEvent("a.ts", 1, old, new), text, text.index("Digest.Digest`") + 13, "typescript",
                     edit_at=text.index("Digest"))
    assert edit is not None and text[edit.start:edit.end] == "Crypto.Crypto" and edit.text == "Digest.Digest"


def test_a_line_rewritten_into_more_lines_in_one_span_is_rewritten_where_it_recurs_verbatim():
    old = "    // If we already have data, resolve immediately\n"
    new = "    // If we already have data, resolve immediately.\n    // This read still counts as a preload.\n"
    text = new + "    x()\n" + old
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new) - 1, "typescript")
    assert edit is not None and text[edit.start:edit.end] == old.rstrip("\n") and edit.text == new.rstrip("\n")


def test_a_name_wrapped_in_a_call_gets_the_call_at_its_next_use():
    old, new = "      return parseFloat(v) < version\n", "      return parseFloat(v) < parseFloat(version)\n"
    text = new + "    }\n    return parseFloat(v) <= version\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, len(new) - 1, "javascript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("version", "parseFloat(version)")
    old, new = "    gz_error(state, Z_OK, NULL);\n", "    PREFIX(gz_error)(state, Z_OK, NULL);\n"
    text = new + "    x = 1;\n    gz_error(state, Z_OK, NULL);\n"
    assert _next(old, new, text, len(new) - 1, "c") == ("gz_error", "PREFIX(gz_error)")
    # never around a parameter being declared, never back above the cursor (the name stays: no rename)
    old, new = "    ...query,\n", "    ...copyClauseArrays(query),\n"
    text = new + "}\nfunction first(query: QueryIR) {\n  return 1\n}\n"
    assert propagate(EditEvent("a.ts", 0, old, new), text, len(new) - 1, "typescript") is None
    assert propagate(EditEvent("a.ts", 2, old, new), "  f(query)\n  g()\n" + new, 12, "typescript") is None


def test_a_wrapped_operand_that_goes_on_as_the_edited_one_did_is_wrapped_too():
    old = "    (flags ? PREFIX(crc32)(check, len) : functable.adler32(check, len))\n"
    new = "    (flags ? PREFIX(crc32)(check, len) : FUNCTABLE_CALL(adler32)(check, len))\n"
    text = new + "#  define UPDATE(check, len) functable.adler32(check, len)\n"
    assert _next(old, new, text, len(new) - 1, "c") == ("functable.adler32", "FUNCTABLE_CALL(adler32)")
    # `typeof x` → `_typeof(x)` still wraps no operand that goes on otherwise (`typeof x.y`)
    assert _next("a = typeof x\n", "a = _typeof(x)\n", "b = typeof x.y\n", language="javascript") is None


def test_a_name_replaced_by_one_that_already_stood_in_the_file_is_no_rename_that_wraps_above():
    # `-> RenderableType` → `-> Blank` where `Blank` is the file's own class: that place's type, nothing renamed
    text = "class Blank: ...\ndef render(self) -> RenderableType:\n    pass\ndef r(self) -> Blank:\n    pass\n"
    cursor = text.index("def r(")
    event = EditEvent("a.py", 3, "def r(self) -> RenderableType:\n", "def r(self) -> Blank:\n")
    assert propagate(event, text, cursor, "python") is None
    # a fresh name (a declaration renamed) still wraps to the uses above
    text = "def render(self) -> RenderableType:\n    pass\ndef r(self) -> Shown:\n    pass\n"
    edit = propagate(EditEvent("a.py", 2, "def r(self) -> RenderableType:\n", "def r(self) -> Shown:\n"), text,
                     text.index("def r("), "python")
    assert edit is not None and text[edit.start:edit.end] == "RenderableType" and edit.start < text.index("def r(")


def test_an_insertion_beside_only_a_keyword_and_a_built_in_type_anchors_nothing():
    old, new = "static const uint32_t kBits[128] = {\n", 'static const BROTLI_MODEL("small") uint32_t kBits[128] = {\n'
    text = new + "void f(void) {\n    const uint32_t code = commands[i] & 0xFF;\n}\n"
    assert propagate(EditEvent("a.c", 0, old, new), text, len(new) - 1, "c") is None
    text = "async def test_b() -> None:\n    pass\n"
    assert propagate(EditEvent("a.py", 0, "async def test_a() -> None:\n", "def test_a() -> None:\n"), text, 0,
                     "python") is None
    # built-in types alone still anchor an insertion between them (a type union)
    assert _next("    id: str | None\n", "    id: str | _Hidden | None\n", "    ids: str | None\n") == (
        "str | None", "str | _Hidden | None")


def test_a_line_rewritten_is_rewritten_where_it_recurs_verbatim_one_block_deeper():
    old = "                ZSTD_ldm_insertEntry(ldmState, hash, newEntry, *params);\n"
    new = "                ZSTD_ldm_insertEntry(ldmState, hash, newEntry, params->bucketSizeLog);\n"
    text = new + "        }\n    }\n            ZSTD_ldm_insertEntry(ldmState, hash, newEntry, *params);\n"
    edit = propagate(EditEvent("a.c", 0, old, new), text, len(new) - 1, "c")
    assert edit is not None and text[edit.start:edit.end] == old.rstrip("\n").replace(" " * 16, " " * 12, 1)
    assert edit.text == new.rstrip("\n").replace(" " * 16, " " * 12, 1)
    # a short line recurs in other blocks by chance: only at the same depth
    old, new = "        await self.on_connect()\n", "        await self.on_connect_health(health=health)\n"
    assert propagate(EditEvent("a.py", 0, old, new), new + "    await self.on_connect()\n", len(new) - 1,
                     "python") is None


def test_a_version_bumped_in_its_last_number_bumps_the_next_pinned_version_with_that_number():
    old, new = "VERSION = '2.13.0'\n", "VERSION = '2.13.1'\n"
    text = new + "_CORE_VERSION = '2.46.0'\nPY = \"3.9.0\"\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new) - 1, "python")
    assert edit is not None and text[edit.start:edit.end] == "0" and text[:edit.start].endswith("'2.46.")
    assert edit.text == "1"
    # another last number, or other quotes, is no release pinned with it
    assert propagate(EditEvent("a.py", 0, old, new), new + "_CORE = '2.46.3'\nPY = \"3.9.0\"\n", len(new) - 1,
                     "python") is None


def test_a_call_taken_off_a_name_is_taken_off_where_the_name_stands_with_it():
    old = "    this.editor.on('update', this.handleEditorUpdate.bind(this))\n"
    new = "    this.editor.on('update', this.handleEditorUpdate)\n"
    text = new + "  }\n  destroy() {\n    this.editor.off('update', this.handleEditorUpdate.bind(this))\n"
    assert _next(old, new, text, len(new) - 1, "typescript") == ("handleEditorUpdate.bind(this)", "handleEditorUpdate")


def test_a_name_with_text_put_after_it_is_not_changed_where_it_goes_on_as_another_operand():
    text = "        if not text:\n            return\n        if text and not text.endswith('\\n'):\n"
    assert propagate(EditEvent("a.py", 0, "        if not text:\n", "        if text is None:\n"), text, 20,
                     "python") is None
    # where it stands as the edited one did, it is changed
    edit = propagate(EditEvent("a.py", 0, "    if not text:\n", "    if text is None:\n"),
                     "    if text is None:\n    elif not text:\n", 20, "python")
    assert edit is not None and edit.text == "text is None"


def test_an_attribute_access_changed_is_not_found_at_the_end_of_a_spread():
    old, new = "  if (logger.bindings) {\n", "  if (logger[ownBindings]) {\n"
    text = new + "  return f.apply(this, [...bindings, ...arguments])\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, len(new) - 1, "javascript")
    assert edit is None or "..." not in text[edit.start - 2:edit.end]


def test_a_name_in_a_type_position_is_renamed_in_a_union_member_too():
    old, new = "    ) -> Literal[False]:\n", "    ) -> typing.Literal[False]:\n"
    text = new + "        proxy_assert_hostname: None | str | Literal[False] = None,\n"
    assert _next(old, new, text, len(new) - 1, "python") == ("Literal", "typing.Literal")
    # ... but still not where the name is a value
    assert propagate(EditEvent("a.py", 0, old, new), new + "        x = Literal\n", len(new) - 1, "python") is None


def test_a_module_renamed_in_an_annotation_is_renamed_where_it_qualifies_anything():
    old = "    def __init__(self, dist: importlib_metadata.Distribution) -> None:\n"
    new = "    def __init__(self, dist: importlib.metadata.Distribution) -> None:\n"
    text = new + "        for dist in list(importlib_metadata.distributions()):\n"
    assert _next(old, new, text, len(new) - 1, "python") == ("importlib_metadata", "importlib.metadata")


def test_a_method_call_rewritten_is_anchored_by_what_it_is_called_on():
    old = "export const f = (self: D): string => toDate(self).toISOString().slice(0, 10)\n"
    new = "export const f = (self: D): string => toDate(self).toISOString().split(\"T\")[0]\n"
    text = new + "export const g = (self: D): string => toDateUtc(self).toISOString().slice(0, 10)\n" \
        "const h = s.slice(0, 10)\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new) - 1, "typescript")
    assert edit is not None and text[edit.start:edit.end] == "toISOString().slice(0, 10)"
    assert edit.text == "toISOString().split(\"T\")[0]"
    # `self.` anchors nothing
    old, new = "        await self.on_connect()\n", "        await self.on_connect_check(check=check)\n"
    assert propagate(EditEvent("a.py", 0, old, new), new + "    self.on_connect()\n", len(new) - 1, "python") is None


def test_a_rename_the_user_goes_on_making_still_wraps_to_the_uses_above():
    # the declaration renamed first, then a use: the new name stands twice, by the user's own edits
    text = "print(count)\ndef total():\n    pass\nx = total()\n"
    first = EditEvent("a.py", 1, "def count():\n", "def total():\n")
    second = EditEvent("a.py", 3, "x = count()\n", "x = total()\n")
    edit = propagate(second, text, len(text) - 1, "python", previous=first)
    assert edit is not None and text[edit.start:edit.end] == "count" and edit.start < 10


def test_a_built_in_type_that_begins_a_declaration_is_anchored_by_the_declared_name():
    old, new = "    int size;\n", "    unsigned long long size;\n"
    text = new + "    int n;\n    x = size;\n    int size;\n"
    edit = propagate(EditEvent("a.c", 0, old, new), text, len(new) - 1, "c")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("int size", "unsigned long long size")
    assert text[:edit.start].endswith("x = size;\n    ")
    # a literal has no declared name
    assert substitution("    None = x\n", "    1 = x\n", "python") is None


def test_a_removed_last_argument_comes_off_the_next_call_of_the_same_function():
    old = "      await executeOperation(this.client, operation, timeoutContext);\n"
    new = "      await executeOperation(this.client, operation);\n"
    text = new + "  x = f(a, timeoutContext);\n" + "    await executeOperation(this.client, op, timeoutContext);\n" \
        + "\n" * 60 + "    await executeOperation(this.client, operation, timeoutContext);\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new) - 1, "typescript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == (", timeoutContext)", ")")
    assert text[:edit.start].endswith("executeOperation(this.client, op")


def test_an_argument_appended_after_a_name_is_appended_where_that_name_closes_the_same_brackets():
    old = "\t\treturn {formatted: null, printMessage};\n"
    new = "\t\treturn {formatted: null, printMessage: shouldPrintMessage};\n"
    text = new + "\tf(printMessage);\n\treturn {formatted: formatted.trim(), printMessage};\n"
    edit = propagate(EditEvent("a.js", 0, old, new), text, len(new) - 1, "javascript")
    assert edit is not None and text[edit.start:edit.end] == "printMessage}"
    assert edit.text == "printMessage: shouldPrintMessage}"
    # not from a definition's parameters (a default) to its calls, nor after a literal, nor a C prototype's
    old, new = "def _group(tlist, cls):\n", "def _group(tlist, cls, depth=0):\n"
    assert propagate(EditEvent("a.py", 0, old, new), new + "    _group(token, cls)\n", len(new) - 1, "python") is None
    old, new = "    g(self.gen, true)\n", "    g(self.gen, true, diagnostics)\n"
    assert propagate(EditEvent("a.ts", 0, old, new), new + "  g(x, true)\n", len(new) - 1, "typescript") is None
    old = "wrap_diff_delta(const git_diff_delta *delta)\n"
    new = "wrap_diff_delta(const git_diff_delta *delta, Diff *diff, size_t idx)\n"
    assert propagate(EditEvent("a.c", 0, old, new), new + "{\n    return wrap_diff_delta(delta);\n", len(new) - 1,
                     "c") is None


def test_a_rename_the_user_goes_on_making_is_made_also_where_the_name_follows_a_colon():
    first = EditEvent("a.js", 1, "\t\t\t\ttestPassed: testOk,\n", "\t\t\t\ttestPassed: isTestOk,\n")
    old, new = "\t\t\ttestPassed: testOk,\n", "\t\t\ttestPassed: isTestOk,\n"
    text = first.new + new + "\t\treturn a && testOk;\n"
    edit = propagate(EditEvent("a.js", 2, old, new), text, len(first.new) + len(new) - 1, "javascript",
                     previous=first)
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("testOk", "isTestOk")
    # the first such edit alone: an object's value is that place's
    assert propagate(EditEvent("a.js", 2, old, new), text, len(first.new) + len(new) - 1, "javascript") is None


def test_an_old_text_of_three_names_goes_top_down_not_first_to_the_same_line():
    old = "\tfork.promise.finally(() => { // eslint-disable-line promise/prefer-await-to-then\n"
    new = "\tfork.promise.finally(() => {\n"
    text = new + "\tx.then(error => { // eslint-disable-line promise/prefer-await-to-then\n\t})\n" + old
    edit = propagate(EditEvent("a.js", 0, old, new), text, len(new) - 1, "javascript")
    assert edit is not None and text[:edit.start].endswith("x.then(error => {")
    # a value of fewer names still goes first to the same line (test_a_changed_value_goes_first_...)


def test_a_statement_keyword_replaced_by_another_is_anchored_by_the_name_after_it():
    old, new = "        elif name == \"__title__\":\n", "        if name == \"__title__\":\n"
    text = new + "            return 1\n        elif other:\n            pass\n        elif name in (1, 2):\n"
    assert _next(old, new, text, len(new) - 1, "python") == ("elif name", "if name")
    # a keyword replaced by a name is still no substitution
    assert substitution("    raise\n", "    values\n", "python") is None


def test_an_argument_added_on_a_line_of_its_own_with_a_trailing_comma_is_complete():
    old = '                    f"{source} errors found but ignored due to Cython extension"\n'
    new = '                    f"{source} errors found but ignored due to Cython extension",\n' \
        '                    stacklevel=2,\n'
    text = "        warn(\n" + new + "        )\n        warn(\n" + old + "        )\n"
    edit = propagate(EditEvent("a.py", 1, old, new), text, len("        warn(\n" + new) - 1, "python")
    assert edit is not None and edit.text == new.rstrip("\n") and text[edit.start:edit.end] == old.rstrip("\n")
    # a comma that ends the one line being typed is still unfinished
    assert propagate(EditEvent("a.py", 1, "    f(a)\n", "    f(a,\n"), "    f(a,\n    f(a)\n", 8, "python") is None


def test_a_property_value_replaced_in_an_object_literal_is_replaced_where_the_property_is_compared_with_it():
    old, new = "\t\tconstructor: UNDEFINED,\n", "\t\tconstructor: VNODE_MARKER,\n"
    text = new + "\tx = 1;\n\treturn vnode != NULL && vnode.constructor === UNDEFINED;\n"
    assert _next(old, new, text, len(new) - 1, "javascript") == ("constructor === UNDEFINED",
                                                                 "constructor === VNODE_MARKER")
    # not a ternary's branch, and not in Python, where `:` begins annotations and dictionaries' values alike
    old, new = "\tconst v = cond ? x : UNDEFINED;\n", "\tconst v = cond ? x : VNODE_MARKER;\n"
    assert propagate(EditEvent("a.js", 0, old, new), new + "\tif (x === UNDEFINED) {}\n", len(new) - 1,
                     "javascript") is None
    assert substitution("    constructor: UNDEFINED,\n", "    constructor: VNODE_MARKER,\n", "python").fallback is None


def test_a_sigil_replaced_before_a_name_is_anchored_by_the_name_it_marks():
    old = "/// A more limited form of [`joinBackward`]($commands.joinBackward)\n"
    new = "/// A more limited form of [`joinBackward`](#commands.joinBackward)\n"
    text = new + "export function f() {}\n\n/// A more limited form of [`joinForward`]($commands.joinForward)\n"
    assert _next(old, new, text, len(new) - 1, "typescript") == ("$commands", "#commands")
    # after a name the name before still anchors it: `a.b` → `a?.b` is not every `.b`
    assert substitution("x = a.b\n", "x = a?.b\n", "javascript").old == "a.b"


def test_a_union_member_appended_to_a_parameters_type_is_anchored_by_the_parameter():
    old = "    def _stir(self, entropy: bytes) -> None:\n"
    new = "    def _stir(self, entropy: bytes | bytearray) -> None:\n"
    text = new + "        pass\n\n    def stir(self, entropy: bytes) -> None:\n        pass\n"
    assert _next(old, new, text, len(new) - 1, "python") == ("entropy: bytes", "entropy: bytes | bytearray")
    # a return type's union member has no parameter to anchor it
    assert substitution("def f(x) -> bytes:\n", "def f(x) -> bytes | None:\n", "python").old != "-> bytes"
    # a member put between others stays anchored by the whole list around it
    sub = substitution("def f(id: str | None = None):\n", "def f(id: str | X | None = None):\n", "python")
    assert sub is not None and sub.old != "id: str"


def test_a_literals_quotes_changed_are_changed_where_the_same_literal_stands_next():
    old = '          /** @type {import("eslint").Rule.Node} */\n'
    new = "          /** @type {import('eslint').Rule.Node} */\n"
    text = new + "          const x = 1;\n        /** @type {import(\"eslint\").Rule.Node} */\n"
    assert _next(old, new, text, len(new) - 1, "javascript") == ('"eslint"', "'eslint'")
    # a literal with no word in it is no anchor by itself
    sub = substitution('x = f("/")\n', "x = f('/')\n", "python")
    assert sub is None or sub.old != '"/"'
    sub = substitution("\t\t\t\tcode += `}\\n`;\n", "\t\t\t\tcode += \"}\\n\";\n", "javascript")
    assert sub is None or sub.old != "`}\\n`"


def test_an_import_of_the_old_name_is_not_renamed_into_a_type_expression_or_a_name_already_imported():
    # the user goes on with the same change (the edit before made it too), so a rename would wrap back to the import
    head = "from parso.utils import split_lines, PythonVersionInfo\n\n"
    old, new = "    version_info: PythonVersionInfo,\n", "    version_info: Tuple[int, int],\n"
    text = head + "def f(\n" + new + "):\n    pass\n\ndef g(\n" + new + "):\n    pass\n"
    before = EditEvent("a.py", 3, old, new)
    edit = propagate(EditEvent("a.py", 8, old, new), text, len(text) - 1, "python", previous=before)
    assert edit is None
    head = "from collections.abc import Mapping, MutableMapping\nfrom .utils import EnvType\n\n"
    old, new = "def f(env: MutableMapping) -> None:\n", "def f(env: EnvType) -> None:\n"
    text = head + new + "    pass\n\n" + new + "    pass\n"
    before = EditEvent("a.py", 3, old, new)
    assert propagate(EditEvent("a.py", 6, old, new), text, len(text) - 1, "python", previous=before) is None
    # a use in code after the cursor is still replaced
    text = head + new + "    pass\n\ndef g(env: MutableMapping) -> None:\n    pass\n"
    edit = propagate(EditEvent("a.py", 3, old, new), text, len(head + new) - 1, "python")
    assert edit is not None and edit.start == text.rindex("MutableMapping")


def test_a_calls_head_rewritten_is_made_at_the_next_call_whatever_its_other_arguments():
    # a helper made a method of its first argument (eleventh round, chevrotain): the head alone is the change
    text = "  y = flatMap(rules, (r) =>\n    g(r),\n  );\n"
    assert _next("  x = flatMap(rules, (r) =>\n", "  x = rules.flatMap((r) =>\n", text, language="typescript") == \
        ("flatMap(rules, ", "rules.flatMap(")
    text = "  return has(tok, \"B\");\n}\nfunction c() {\n  return has(tok, \"C\");\n"
    assert _next("  return has(tok, \"A\");\n", "  return Object.hasOwn(tok ?? {}, \"A\");\n", text,
                 language="typescript") == ("has(tok", "Object.hasOwn(tok ?? {}")
    assert _next("    f(drop(defs, i + 1));\n", "    f(defs.slice(i + 1));\n", "  d: drop(defs, i),\n",
                 language="typescript") == ("drop(defs, ", "defs.slice(")


def test_a_method_made_a_helper_of_its_object_is_rewritten_at_its_next_call_whatever_the_arguments():
    # twelfth round (svelte): `input.hasAttribute('value')` → `has_attribute(input, 'value')`, then the same for
    # `input.hasAttribute('checked')`; a call without arguments is rewritten whole
    text = "\t\tif (has_attribute(input, 'value')) {\n\t\t}\n\t\tif (input.hasAttribute('checked')) {\n"
    event = EditEvent("a.js", 0, "\t\tif (input.hasAttribute('value')) {\n",
                      "\t\tif (has_attribute(input, 'value')) {\n")
    edit = propagate(event, text, 30, "javascript")
    assert edit is not None
    assert (text[edit.start:edit.end], edit.text) == ("input.hasAttribute(", "has_attribute(input, ")
    text = "  a = size(node);\n  b = node.size();\n"
    edit = propagate(EditEvent("a.js", 0, "  a = node.size();\n", "  a = size(node);\n"), text, 16, "javascript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("node.size()", "size(node)")
    # `self.` / `this.` name any method of the class: no helper of them
    assert propagate(EditEvent("a.py", 0, "    x = self.run(a)\n", "    x = run(self, a)\n"),
                     "    x = run(self, a)\n    y = self.run(b)\n", 20, "python") is None


def test_a_version_bumped_is_bumped_where_it_is_written_as_a_tuple_of_its_numbers():
    # eleventh round (sphinx): `__version__ = '9.0.2'`, then `version_info = (9, 0, 1, 'final', 0)`
    text = "__version__ = '9.0.2'\n# (1, 2, 1, 'beta', 3)\nversion_info = (9, 0, 1, 'final', 0)\n"
    edit = propagate(EditEvent("a.py", 0, "__version__ = '9.0.1'\n", "__version__ = '9.0.2'\n"), text, 20, "python")
    assert edit is not None and text[:edit.start].endswith("(9, 0, ") and (text[edit.start:edit.end], edit.text) == \
        ("1", "2")
    assert propagate(EditEvent("a.py", 0, "__version__ = '9.0.1'\n", "__version__ = '9.0.2'\n"),
                     "__version__ = '9.0.2'\nv = (19, 0, 1)\nw = (9, 0, 10)\n", 20, "python") is None


def test_a_version_bumped_is_bumped_in_a_named_tuple_of_its_numbers():
    # twelfth round (docutils): `__version__ = '0.22.3'`, then `VersionInfo(major=0, minor=22, micro=2, ...)`
    text = "__version__ = '0.22.3'\n\n__version_info__ = VersionInfo(\n    major=0,\n    minor=22,\n    micro=2,\n" \
        "    releaselevel='final',\n)\n"
    event = EditEvent("a.py", 0, "__version__ = '0.22.2'\n", "__version__ = '0.22.3'\n")
    edit = propagate(event, text, 21, "python")
    assert edit is not None and text[:edit.start].endswith("micro=") and (text[edit.start:edit.end], edit.text) == \
        ("2", "3")
    # a call that takes the same numbers, not all of them named, is no version
    assert propagate(event, "__version__ = '0.22.3'\nf(0, 22, width=2)\nf(major=0, x, micro=2)\n", 21, "python") is None


def test_a_generics_arguments_taken_off_are_taken_off_where_it_stands_before_other_punctuation():
    # twelfth round (hatchling): `metadata: ProjectMetadata[PluginManagerBound],` lost its type arguments; the
    # next use is a return type, followed by `:`, not `,`
    text = "        metadata: ProjectMetadata,\n    ) -> None:\n\n    def metadata(self) -> ProjectMetadata[Bound]:\n" \
        "        x = ProjectMetadata[PluginManagerBound]\n\n" \
        "    def meta(self) -> ProjectMetadata[PluginManagerBound]:\n"
    event = EditEvent("a.py", 0, "        metadata: ProjectMetadata[PluginManagerBound],\n",
                      "        metadata: ProjectMetadata,\n")
    edit = propagate(event, text, 33, "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == \
        ("ProjectMetadata[PluginManagerBound]", "ProjectMetadata")
    assert text[:edit.start].endswith("x = ")  # the next use with those arguments, not one with others
    # a subscript of two groups, or one taken off no name, is no generic's arguments
    assert propagate(EditEvent("a.py", 0, "    y = rows[0][1],\n", "    y = rows[0],\n"), "    z = rows[0][1]:\n",
                     0, "python") is None


def test_a_keyword_argument_appended_to_a_call_is_appended_to_the_next_call_of_that_function():
    # twelfth round (celery): `saferepr(args, self.argsrepr_maxsize)` got `maxlevels=...`; the next `saferepr` call
    # with as many arguments gets it too, not one reached another way, one in a comment or one that has it
    text = "    a = saferepr(args, self.argsrepr_maxsize, maxlevels=m)\n    # saferepr(kwargs, size)\n" \
        "    b = x.saferepr(kwargs, size)\n    c = saferepr(kwargs, size, maxlevels=3)\n    d = saferepr(kw)\n" \
        "    e = saferepr(kwargs, self.kwargsrepr_maxsize)\n"
    event = EditEvent("a.py", 0, "    a = saferepr(args, self.argsrepr_maxsize)\n",
                      "    a = saferepr(args, self.argsrepr_maxsize, maxlevels=m)\n")
    edit = propagate(event, text, 60, "python")
    assert edit is not None and edit.start == edit.end and edit.text == ", maxlevels=m"
    assert text[:edit.start].endswith("e = saferepr(kwargs, self.kwargsrepr_maxsize")
    # a parameter's default is no argument; a positional argument is that place's value
    assert propagate(EditEvent("a.py", 0, "def f(a, b):\n", "def f(a, b, depth=0):\n"),
                     "def f(a, b, depth=0):\n    f(x, y)\n", 21, "python") is None
    assert propagate(EditEvent("a.py", 0, "    g(a, b)\n", "    g(a, b, c)\n"), "    g(a, b, c)\n    g(x, y)\n", 14,
                     "python") is None


def test_an_annotation_comment_taken_out_of_code_is_taken_out_where_it_stands_next():
    # sixteenth round (lexical): `/* @__PURE__ */ ` came off `defineExtension({`; the next one stands before another
    # call (`safeCast<ListConfig>(`), not only before the same name; one in a comment of its own is no annotation
    old, new = "export const A = /* @__PURE__ */ defineExtension({\n", "export const A = defineExtension({\n"
    text = new + "  // see /* @__PURE__ */ x\n  config: /* @__PURE__ */ safeCast<ListConfig>({\n  }),\n" \
        "export const B = /* @__PURE__ */ defineExtension({\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new), "typescript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("/* @__PURE__ */ ", "")
    assert text[:edit.start].endswith("config: ")
    # ... also one of several words, which would otherwise stand for itself anywhere
    i_old, i_new = "  x = /* istanbul ignore next */ f()\n", "  x = f()\n"
    i_text = i_new + "  // /* istanbul ignore next */ y\n\n  z = /* istanbul ignore next */ g()\n"
    edit = propagate(EditEvent("a.js", 0, i_old, i_new), i_text, len(i_new), "javascript")
    assert edit is not None and i_text[:edit.start].endswith("z = ")
    # a comment of punctuation only anchors nothing by itself
    assert substitution("f(a, /**/ b)\n", "f(a, b)\n", "typescript").old != "/**/ "


def test_a_keyword_argument_taken_out_of_a_call_is_taken_out_of_the_next_call_of_that_function():
    # fifteenth round (dask): `engine="pyarrow"` came off `dd.read_parquet(tmpdir, engine="pyarrow", dtype_backend=
    # "numpy_nullable")`; the next `dd.read_parquet` call with that argument, name and value, loses it too, whatever
    # its other arguments, not a call reached another way, one with another value or one in a comment
    old = '    ddf = dd.read_parquet(tmpdir, engine="pyarrow", dtype_backend="numpy_nullable")\n'
    new = '    ddf = dd.read_parquet(tmpdir, dtype_backend="numpy_nullable")\n'
    text = new + '    # dd.read_parquet(p, engine="pyarrow", x=1)\n    a = read_parquet(p, engine="pyarrow")\n' \
        '    b = dd.read_parquet(p, engine="fastparquet")\n' \
        '    c = dd.read_parquet(p, engine="pyarrow", dtype_backend="pyarrow")\n'
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ('engine="pyarrow", ', "")
    assert text[:edit.start].endswith("c = dd.read_parquet(p, ")
    # the last argument goes with the comma before it
    last = "    f(a, b, k=[1, 2])\n"
    edit = propagate(EditEvent("a.py", 0, "    f(x, k=[1, 2])\n", "    f(x)\n"), last, 0, "python")
    assert edit is not None and last[edit.start:edit.end] == ", k=[1, 2]"
    # a parameter's default is no argument
    assert propagate(EditEvent("a.py", 0, "def f(a, k=1):\n", "def f(a):\n"), "    f(b, k=1)\n", 0, "python") is None


def test_a_name_made_a_call_is_not_made_one_in_a_python_annotation():
    # fifteenth round (ipython): `sqlite3` → `_sqlite3()` (a module imported lazily); `db: sqlite3.Connection` is a
    # type, which a call cannot be, and the next use in code is the place
    old, new = "    except sqlite3.IntegrityError:\n", "    except _sqlite3().IntegrityError:\n"
    text = new + "    db: sqlite3.Connection | None = None\n    def f(self) -> sqlite3.Row:\n" \
        "        self.db = sqlite3.connect(p)\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and edit.text == "_sqlite3()" and text[:edit.start].endswith("self.db = ")
    # in JavaScript a `key: value` holds an expression
    js_old, js_new = "  a: Meta,\n", "  a: optional(Meta),\n"
    js = js_new + "  b: Meta,\n"
    assert _next(js_old, js_new, js, len(js_new), "typescript") == ("Meta", "optional(Meta)")


def test_a_parameter_appended_to_a_definition_is_passed_on_to_the_call_with_the_old_parameters():
    # twelfth round (eslint-plugin-unicorn): `function isBigInt(node, context)` got `overrides`; the call it wraps,
    # `isBigIntTarget(node, context)`, passes it on. Not another definition with those parameters, not a call of
    # one name only, and not from a call's arguments (that list is the call's own)
    text = "export default function isBigInt(node, context, overrides) {\n  function check(node, context) {}\n" \
        "  f(node)\n  if (isBigIntTarget(node, context)) {\n"
    event = EditEvent("a.js", 0, "export default function isBigInt(node, context) {\n",
                      "export default function isBigInt(node, context, overrides) {\n")
    edit = propagate(event, text, 58, "javascript")
    assert edit is not None and edit.start == edit.end and edit.text == ", overrides"
    assert text[:edit.start].endswith("isBigIntTarget(node, context")
    assert propagate(EditEvent("a.js", 0, "  x = parse(property, v);\n", "  x = parse(property, v, priority);\n"),
                     "  x = parse(property, v, priority);\n  y = other(property, v);\n", 30, "javascript") is None


def test_a_qualifier_taken_out_of_the_middle_of_a_path_comes_out_where_the_path_stands_again():
    # twelfth round (narwhals): `mod.pandas.DataFrame` → `mod.DataFrame`, then `mod.pandas.Series`
    text = "        and isinstance(df, mod.DataFrame)\n\n        and isinstance(ser, pandas.Series)\n" \
        "        and isinstance(ser, mod.pandas.Series)\n"
    event = EditEvent("a.py", 0, "        and isinstance(df, mod.pandas.DataFrame)\n",
                      "        and isinstance(df, mod.DataFrame)\n")
    edit = propagate(event, text, 40, "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("mod.pandas.", "mod.")
    assert text[:edit.start].endswith("isinstance(ser, ") and text[edit.end:].startswith("Series)\n")


def test_an_annotation_wrapped_in_a_generic_is_wrapped_at_the_next_annotation_of_that_type():
    # thirteenth round (litestar, sentry-sdk): `file_path: PurePath` → `file_path: FromPath[PurePath]`, then the
    # next parameter annotated `PurePath`, closed by `)`; a TypedDict's `content: str` at a line's end likewise
    text = "    async def get(file_path: FromPath[PurePath]) -> R:\n        x = PurePath(p)\n" \
        "    async def head(file_path: PurePath) -> R:\n"
    event = EditEvent("a.py", 0, "    async def get(file_path: PurePath) -> R:\n",
                      "    async def get(file_path: FromPath[PurePath]) -> R:\n")
    edit = propagate(event, text, 40, "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("PurePath", "FromPath[PurePath]")
    assert text[:edit.start].endswith("head(file_path: ")
    text = "        role: NotRequired[str]\n        name = str(x)\n        content: str\n"
    edit = propagate(EditEvent("a.py", 0, "        role: str\n", "        role: NotRequired[str]\n"), text, 28,
                     "python")
    assert edit is not None and text[:edit.start].endswith("content: ") and edit.text == "NotRequired[str]"


def test_a_sentence_taken_out_of_a_comment_after_a_full_stop_is_taken_out_again():
    # twelfth round (openai): `... output_compression. SVG edits are not supported.` lost its last sentence; the
    # same sentence after another full stop is no qualifier (`a.typing.`), which the text before it would make it
    text = "  /**\n   * or output_compression.\n   */\n  /**\n   * or output_compression. SVG edits are not " \
        "supported.\n   */\n"
    event = EditEvent("a.ts", 0, "   * or output_compression. SVG edits are not supported.\n",
                      "   * or output_compression.\n")
    edit = propagate(event, text, 31, "typescript", region="comment")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == (" SVG edits are not supported.", "")


def test_in_a_string_a_run_of_lines_that_begin_with_the_old_text_is_one_edit():
    # eleventh round (ol's shaders in template literals): lines of code in a string, not prose
    text = ("const s = `\n  varying vec2 v_local;\n  if (\n    v_map[0] < 1. ||\n    v_map[1] > 2.\n  ) {}\n"
            "  // v_map\n  // v_map\n`;\n")
    edit = propagate(EditEvent("a.js", 0, "  varying vec2 v_map;\n", "  varying vec2 v_local;\n"), text,
                     text.index("v_local;"), "javascript", region=STRING)
    assert edit is not None and text[edit.start:edit.end] == "v_map[0] < 1. ||\n    v_map" and \
        edit.text == "v_local[0] < 1. ||\n    v_local"


def test_a_word_only_python_reserves_is_a_name_in_javascript():
    # eleventh round (ol): `global` → `globalThis`, Node's global object renamed at its next use
    text = "  globalThis.XHR = xhr;\n}\nfunction restore() {\n  global.XHR = original;\n}\n"
    assert _next("  global.XHR = xhr;\n", "  globalThis.XHR = xhr;\n", text, 5, language="javascript") == \
        ("global", "globalThis")
    assert _next("  global XHR\n", "  globalThis XHR\n", "  global XHR\n", 0, language="python") is None


def test_a_comparison_with_a_singleton_rewritten_is_anchored_by_the_operator_and_the_literal():
    # eleventh round (networkx): `node["a"] == True` → `is True`, then `edge["b"] == True`
    text = '    assert node["a"] is True\n    assert edge["b"] == True\n'
    assert _next('    assert node["a"] == True\n', '    assert node["a"] is True\n', text, 10) == ("== True", "is True")
    assert _next("    if x != None:\n", "    if x is not None:\n", "    if x is not None:\n    if y != None:\n",
                 10) == ("!= None", "is not None")


def test_an_argument_appended_to_a_method_call_goes_on_at_the_same_objects_other_methods_with_those_arguments():
    # eleventh round (gunicorn): `self.log.error(msg)` got `*msg_args`, then `self.log.info(msg)`
    text = "            self.log.error(msg, *msg_args)\n        else:\n            self.log.info(msg)\n"
    edit = propagate(EditEvent("a.py", 0, "            self.log.error(msg)\n",
                               "            self.log.error(msg, *msg_args)\n"), text, 20, "python")
    assert edit is not None and text[:edit.start].endswith("self.log.info(msg") and edit.text == ", *msg_args"
    # after a bare `self.` any method of the class would do: not that
    text = "        self.error(msg, *msg_args)\n        self.info(msg)\n"
    assert propagate(EditEvent("a.py", 0, "        self.error(msg)\n", "        self.error(msg, *msg_args)\n"),
                     text, 20, "python") is None


def test_a_class_named_by_a_doc_tag_is_renamed_with_the_code_top_down():
    # twelfth round (three): `TempNode` → `Node` in the import, then `@augments TempNode`, then `extends TempNode`
    text = "import { Node } from 'three/tsl';\n/**\n * @augments TempNode\n */\nclass A extends TempNode {\n}\n"
    assert _next("import { TempNode } from 'three/tsl';\n", "import { Node } from 'three/tsl';\n", text, 12,
                 language="javascript") == ("TempNode", "Node")
    edit = propagate(EditEvent("a.js", 0, "import { TempNode } from 'three/tsl';\n",
                               "import { Node } from 'three/tsl';\n"), text, 12, "javascript")
    assert edit is not None and text[:edit.start].endswith("@augments ")
    # ... and renamed in the tag first, the class's code follows
    text = "import { Node } from 'three/tsl';\n/**\n * @augments Node\n */\nclass A extends TempNode {\n}\n"
    edit = propagate(EditEvent("a.js", 2, " * @augments TempNode\n", " * @augments Node\n"), text, 50, "javascript")
    assert edit is not None and text[:edit.start].endswith("class A extends ") and edit.text == "Node"


def test_a_comment_appended_to_an_import_line_goes_on_at_the_next_import_of_that_name():
    # twelfth round (oauthlib): `import jwt` got a trailing noqa comment, then the next function's `import jwt`
    text = "def f():\n    import jwt  # noqa: PLC0415\n    return jwt.encode(x)\n\ndef g():\n    import jwt\n"
    assert _next("    import jwt\n", "    import jwt  # noqa: PLC0415\n", text, 20) == ("jwt", "jwt  # noqa: PLC0415")
    # ... the same import, not another import of the name
    text = "try:\n    import simplejson as json  # type: ignore\nexcept ImportError:\n    import json\n"
    assert _next("    import simplejson as json\n", "    import simplejson as json  # type: ignore\n", text, 20) is None


def test_a_call_put_around_a_declared_parameter_goes_around_the_next_declared_parameter_of_that_name():
    # twelfth round (gmpy2): `CTXT_Object *context` → `CTXT_Object *Py_UNUSED(context)`, then the next definition's
    text = ("PyObject *\nA_New(CTXT_Object *Py_UNUSED(context))\n{\n    return x;\n}\n\nPyObject *\n"
            "B_New(CTXT_Object *context)\n{\n    if (context) return f(context);\n}\n\n"
            "PyObject *\nC_New(CTXT_Object *context)\n{\n    return y;\n}\n")
    edit = propagate(EditEvent("a.c", 1, "A_New(CTXT_Object *context)\n", "A_New(CTXT_Object *Py_UNUSED(context))\n"),
                     text, 40, "c")
    assert edit is not None and text[:edit.start].endswith("B_New(CTXT_Object *") and \
        (text[edit.start:edit.end], edit.text) == ("context", "Py_UNUSED(context)")


def test_a_change_in_prose_is_made_where_its_phrase_stands_again_in_another_region():
    # seventeenth round (lupa's LuaJIT): the header comment's copyright year went from 2023 to 2025; the same phrase
    # stands again as a string, `#define LUAJIT_COPYRIGHT "Copyright (C) 2005-2023 Mike Pall"`
    old = "** Copyright (C) 2005-2023 Mike Pall. All rights reserved.\n"
    new = "** Copyright (C) 2005-2025 Mike Pall. All rights reserved.\n"
    text = "/*\n" + new + "*/\n#define LUAJIT_VERSION \"LuaJIT 2.1\"\n#define LUAJIT_COPYRIGHT\t\"Copyright (C) " \
        "2005-2023 Mike Pall\"\n"
    edit = propagate(EditEvent("a.h", 1, old, new), text, len("/*\n" + new), "c", edit_at=3)
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("C) 2005-2023", "C) 2005-2025")
    assert text[:edit.start].endswith('LUAJIT_COPYRIGHT\t"Copyright (')
    # ... only with the same words on both sides: the year alone, elsewhere, is another year
    other = "/*\n" + new + "*/\n#define RELEASED \"(C) 2005-2023 by others\"\n"
    assert propagate(EditEvent("a.h", 1, old, new), other, len("/*\n" + new), "c", edit_at=3) is None


def test_a_python_generics_later_argument_is_a_type_position():
    # seventeenth round (sanic): `-> List[Route]` → `-> list[Route]`, then `List` as a later argument of a union,
    # and as the first argument on a line of its own; not in a subscript of a value
    old, new = "    def a(self) -> List[Route]:\n", "    def a(self) -> list[Route]:\n"
    text = new + "    x = table[key, List]\n    host: Optional[Union[str, List[str]]] = None,\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("Union[str, ")
    text = new + "    z: Optional[\n        List[str]\n    ] = None\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("Optional[\n        ")


def test_a_code_change_goes_to_code_before_a_docstrings_mention():
    # seventeenth round (sanic): `-> Dict[str, List[str]]` modernised; the docstring's `Dict[str, List[str]]:` just
    # below is no code: the next annotation first
    old = "def parse(raw: str) -> Dict[str, List[str]]:\n"
    new = "def parse(raw: str) -> dict[str, list[str]]:\n"
    text = new + '    """Parse.\n\n    Returns:\n        Dict[str, List[str]]: the cookies\n    """\n' \
        "    cookies: Dict[str, List[str]] = {}\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("cookies: ")


def test_a_bare_generic_given_type_arguments_gets_them_at_its_next_bare_use_in_a_type_position():
    # seventeenth round (falcon): `def inspect_app(app: App)` → `App[_ReqT, _RespT]`, then the next function's
    # `app: App`, not `App.x` nor `App(` nor a use already given arguments
    old, new = "def inspect_app(app: App) -> AppInfo:\n", "def inspect_app(app: App[_ReqT, _RespT]) -> AppInfo:\n"
    text = new + "    App.x = App()\n    y: App[int]\n\ndef inspect_routes(app: App) -> list[RouteInfo]:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("", "[_ReqT, _RespT]")
    assert text[:edit.start].endswith("def inspect_routes(app: App")
    # ... before a union's bar as well (`IO | None` → `IO[bytes] | None`)
    old = "    def pipe(self, dest: IO | None = None) -> None:\n"
    new = "    def pipe(self, dest: IO[bytes] | None = None) -> None:\n"
    text = new + "        pass\n\n    def pipe_until(self, dest: IO | None = None) -> None:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and edit.text == "[bytes]" and text[:edit.start].endswith("dest: IO")


def test_a_python_f_strings_replacement_fields_are_code():
    # eighteenth round (mcp): `FastMCP` → `MCPServer`, then `isinstance(server_object, FastMCP)` and the error message
    # below it, `f"... (expecting {FastMCP})."`: one hunk of two lines; a plain string's braces and `{{` stay text
    text = 'x = f"a {FastMCP} b {{c}} {d!r:>{w}}" + g("{e}") + rf"{h}"\n'
    found = regions(text, "python")
    for code in ("FastMCP", "d!r", "h}"):
        assert found.kind_at(text.index(code)) == CODE, code
    for prose in ("{{c}}", "{e}", "a {"):
        assert found.kind_at(text.index(prose)) == STRING, prose
    old, new = "from x import FastMCP\n", "from x import MCPServer\n"
    text = new + "if not isinstance(s, FastMCP):\n    log(f\"{s} (expecting {FastMCP}).\")\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[edit.end:].startswith("}).") and edit.text.count("MCPServer") == 2


def test_a_typescript_casts_type_is_a_type_position():
    # eighteenth round (@ai-sdk/gateway): `experimental_realtime: RealtimeFactoryV4;` → `GatewayRealtimeFactory`,
    # then `) as RealtimeFactoryV4;` far below; in Python `as` names a binding, no type
    old, new = "  experimental_realtime: RealtimeFactoryV4;\n", "  experimental_realtime: GatewayRealtimeFactory;\n"
    text = new + "}\nconst RealtimeFactoryV4x = 1;\nconst f = (\n  make()\n) as RealtimeFactoryV4;\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new), "typescript")
    assert edit is not None and text[:edit.start].endswith(") as ")
    old, new = "def f(x: Loader) -> None:\n", "def f(x: Reader) -> None:\n"
    text = new + "import a as Loader\nwith open(p) as Loader:\n    pass\n"
    assert propagate(EditEvent("a.py", 0, old, new), text, len(new), "python") is None


def test_a_built_in_type_argument_with_no_name_of_its_own_near_is_anchored_by_its_whole_generic():
    # nineteenth round (websockets): `Generator[None, None, bytes]` → `bytearray` in one method's return type, then
    # the next method's same return type; not every `bytes`, nor a generic with other arguments
    old = "    def read_line(self, m: int) -> Generator[None, None, bytes]:\n"
    new = "    def read_line(self, m: int) -> Generator[None, None, bytearray]:\n"
    text = new + "        x = bytes(m)\n        y: Generator[None, int, bytes]\n" \
        "    def read_exact(self, n: int) -> Generator[None, None, bytes]:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("read_exact(self, n: int) -> ")
    assert edit.text == "Generator[None, None, bytearray]"


def test_a_union_member_put_first_in_a_parameters_type_is_anchored_by_the_parameter_and_the_type():
    # nineteenth round (websockets): `code: int | None` → `code: CloseCode | int | None` in `send_close`, then
    # `fail(self, code: int, ...)`; not another parameter of that type
    old = '    def send_close(self, code: int | None = None, reason: str = "") -> None:\n'
    new = '    def send_close(self, code: CloseCode | int | None = None, reason: str = "") -> None:\n'
    text = new + "        pass\n\n    def f(self, size: int) -> None:\n        pass\n\n" \
        '    def fail(self, code: int, reason: str = "") -> None:\n'
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("code: int", "code: CloseCode | int")
    assert text[:edit.start].endswith("def fail(self, ")


def test_a_name_renamed_in_a_code_span_of_prose_goes_to_the_next_code_span_naming_it():
    # twenty-first round (dspy): `dspy.ReAct` → `dspy.ReActV2` in a docstring's code span; upstream renamed every code
    # span top-down, the call `dspy.ReAct(...)` first, not the next mention in the edited one's shape further down
    head = '"""Primitives.\n\n'
    old, new = "   `dspy.ReAct` / `dspy.RLM` over a signature.\n", "   `dspy.ReActV2` / `dspy.RLM` over a signature.\n"
    text = head + new + "\n- `dspy.ReAct(sig, tools=[t])`, reasoning and tools\n" \
        "\n- Tools for `dspy.ReAct` / `dspy.RLM` come from two places.\n\"\"\"\n"
    edit = propagate(EditEvent("a.py", 2, old, new), text, len(head + new), "python", edit_at=len(head) + 9)
    assert edit is not None and text[:edit.start].endswith("- `dspy.") and edit.text == "ReActV2"
    # ... reStructuredText's double backticks too
    text = text.replace("`", "``")
    edit = propagate(EditEvent("a.py", 2, old.replace("`", "``"), new.replace("`", "``")), text,
                     len(head + new) + 4, "python", edit_at=len(head) + 10)
    assert edit is not None and text[:edit.start].endswith("- ``dspy.")
    # a word of plain prose keeps its shape: the next mention with the edited one's neighbours
    old, new = "   the ReAct module / the RLM module.\n", "   the ReActV2 module / the RLM module.\n"
    text = head + new + "\n- ReAct(sig) for reasoning\n\n- the ReAct module / the RLM module again.\n\"\"\"\n"
    edit = propagate(EditEvent("a.py", 2, old, new), text, len(head + new), "python", edit_at=len(head) + 7)
    assert edit is not None and text[:edit.start].endswith("- the ")


def test_a_name_renamed_in_code_reaches_a_message_that_writes_it_with_its_module():
    # twenty-first round (dspy): `dspy.LMResponse` → `dspy.lm15.Response` in an isinstance check, then the error
    # message below that names `dspy.LMResponse`; not a bare `LMResponse` in prose, nor another module's
    old, new = "    if isinstance(r, dspy.LMResponse):\n", "    if isinstance(r, dspy.lm15.Response):\n"
    text = new + '        raise TypeError("Sub-LM must return dspy.LMResponse or a list")\n'
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("LMResponse", "lm15.Response")
    assert text[:edit.start].endswith("must return dspy.")
    text = new + '        raise TypeError("an LMResponse or a list")\n        log("other.LMResponse")\n'
    assert propagate(EditEvent("a.py", 0, old, new), text, len(new), "python") is None


def test_a_trailing_comment_taken_off_goes_to_the_same_line_elsewhere_first_and_alone():
    # twenty-first round (instructor): the noqa comment for ARG002 taken off `stream: bool = False,` once `stream` was
    # used; upstream did the same in the next method's `stream` parameter, not on `is_async` just below, which keeps it
    old, new = "        stream: bool = False,  # noqa: ARG002\n", "        stream: bool = False,\n"
    other = "        is_async: bool = False,  # noqa: ARG002\n"
    body = "    ) -> Any:\n" + "".join(f"        x{i} = {i}\n" for i in range(60)) + "    def g(\n        self,\n"
    text = new + other + body + old + other
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("  # noqa: ARG002", "")
    assert edit.start == len(new + other + body) + len("        stream: bool = False,")


def test_a_return_types_arrow_is_one_step_of_the_anchor_before_a_built_in_type():
    # twenty-first round (dspy): `-> bool` → `-> str | None` after `signature: type[Signature])`, then the next method
    # with that parameter; not another method's `-> bool`
    old = "    def _history_field(self, signature: type[Signature]) -> bool:\n"
    new = old.replace("-> bool", "-> str | None")
    text = new + "        return None\n\n    def f(self) -> bool:\n        pass\n\n" \
        "    def _input_field(self, signature: type[Signature]) -> bool:\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("_input_field(self, signature: type[")
    assert edit.text == "Signature]) -> str | None"


def test_a_clause_appended_to_a_condition_is_appended_where_the_same_line_stands_again():
    # twenty-first round (instructor): `if not in_codeblock and char == "`":` given `and not (json_started and
    # in_string)`, then the same line in the streaming variant below; its anchor lies too far back for a substitution
    old = '            if not in_codeblock and char == "`":\n'
    new = '            if not in_codeblock and char == "`" and not (json_started and in_string):\n'
    text = new + "                pass\n        for char in chunk:\n            if char == \"`\":\n" + old
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == (old.rstrip("\n"), new.rstrip("\n"))
    # ... only a clause put before the block's `:` or `{`: another change of one span stays the substitution's to
    # repeat or to refuse
    assert _appended_clause("  if (a == b) {\n", "  if (a == b && !c) {\n")
    assert not _appended_clause(old, old.replace('"`":', '"`":  # fence'))
    assert not _appended_clause(old, old.replace("and char", "or char"))
    assert not _appended_clause("    x = f(a)\n", "    x = f(a) and g(b)\n")


def test_an_attribute_taken_off_the_end_of_a_path_is_anchored_by_the_name_it_followed():
    # twenty-second round (@ai-sdk/cohere): `convertCohereUsage(response.usage.tokens)` → `(response.usage)`, then
    # `usage = value.delta.usage.tokens;` in the stream handler, not only inside the same call
    old = "      usage: convertCohereUsage(response.usage.tokens),\n"
    new = "      usage: convertCohereUsage(response.usage),\n"
    text = new + "      other: stats.tokens,\n      if (usage.tokens && ok) f(usage.tokens.count);\n" \
        "                usage = value.delta.usage.tokens;\n"
    edit = propagate(EditEvent("a.ts", 0, old, new), text, len(new), "typescript")
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("usage.tokens", "usage")
    assert text[:edit.start].endswith("value.delta.")
    # ... a method taken off is no attribute: `x.size()` is a call of its own
    old, new = "    n = len(items.keys())\n", "    n = len(items)\n"
    assert _next(old, new, new + "    m = items.keys\n") is None


def test_a_name_renamed_in_a_docstring_reaches_a_run_of_string_literals_in_code_as_one_edit():
    # twenty-second round (crewai): `CrewAgentExecutor` → `AgentExecutor` in a docstring, then two lines of
    # `cast("CrewAgentExecutor", executor)`: strings in lines of code, no prose, so the run is one edit
    head = '    def f(self, executor):\n        """Args:\n'
    old = "            executor: The CrewAgentExecutor instance\n"
    new = old.replace("CrewAgentExecutor", "AgentExecutor")
    text = head + new + '        """\n        self.task = cast("CrewAgentExecutor", executor).task\n' \
        '        self.crew = cast("CrewAgentExecutor", executor).crew\n'
    edit = propagate(EditEvent("a.py", 2, old, new), text, len(head + new), "python",
                     edit_at=len(head) + len("            executor: The "))
    assert edit is not None and text[edit.start:edit.end].count("CrewAgentExecutor") == 2
    # ... while a run of docstring lines is still the user's to pick one by one
    text = head + new + "            other: a CrewAgentExecutor too\n            more: the CrewAgentExecutor\n"
    edit = propagate(EditEvent("a.py", 2, old, new), text, len(head + new), "python",
                     edit_at=len(head) + len("            executor: The "))
    assert edit is not None and text[edit.start:edit.end] == "CrewAgentExecutor"


def test_a_method_renamed_at_a_def_whose_self_is_on_the_next_line_is_renamed_on_self():
    # twenty-third round (openai-agents): `async def _write_items_attempt(` → `_mutate_items_attempt(` with `self,` on
    # the line below (outside the hunk), then `self._write_items_attempt(pipe, ...)`
    old, new = "    async def _write_items_attempt(\n", "    async def _mutate_items_attempt(\n"
    text = new + "        self,\n        pipe,\n    ) -> None:\n        pass\n\n    async def run(self):\n" \
        "        await self._write_items_attempt(pipe)\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new) - 2, "python", edit_at=14)
    assert edit is not None and text[:edit.start].endswith("await self.") and edit.text == "_mutate_items_attempt"


def test_a_name_made_a_forward_reference_is_replaced_in_the_next_annotation():
    # twenty-third round (litellm): `cache: DualCache,` → `cache: "UserApiKeyCache",`, then the next function's
    # `cache: DualCache,`: the edit begins with a quote, yet the name stood in code
    old, new = "    cache: DualCache,\n", '    cache: "UserApiKeyCache",\n'
    text = new + ") -> None:\n    pass\n\n\ndef g(\n    cache: DualCache,\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new) - 2, "python", edit_at=11)
    assert edit is not None and (text[edit.start:edit.end], edit.text) == ("DualCache", '"UserApiKeyCache"')
    # ... a value made a literal is a change of its place (fsspec's `mode=mode` → `mode="rb"`), not a rename of `mode`
    old, new = "            mode=mode,\n", '            mode="rb",\n'
    text = "    f = open(\n" + new + "            cache=mode,\n"
    assert propagate(EditEvent("a.py", 1, old, new), text, len("    f = open(\n" + new) - 2, "python",
                     edit_at=len("    f = open(\n            mode=")) is None


def test_a_call_put_around_a_name_never_goes_around_an_assignments_target():
    # twenty-third round (openai-agents): `return output` → `return _escape(output)`, then the next function's
    # `output = "..."` and `output += ...` lines are targets, not uses; its `return output` is the next use
    old, new = "    return output\n", "    return _escape(output)\n"
    text = new + '\n\ndef g(r):\n    output = "Details:"\n    output += f"\\n- {r}"\n    return output\n'
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("    return ") and edit.text == "_escape(output)"


def test_a_containers_method_replaced_by_anothers_stays_on_its_receiver():
    # twenty-third round (llama-index): `current_hashes = []` made a set, so `.append(` → `.add(` on it, not on
    # `nodes_to_run.append(node)` just above the next use
    old, new = "                current_hashes.append(h)\n", "                current_hashes.add(h)\n"
    text = new + "        for node in nodes:\n                nodes_to_run.append(node)\n" \
        "                current_hashes.append(node.hash)\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("                current_hashes.") and edit.text == "add"


def test_a_class_renamed_in_code_is_renamed_where_a_string_is_its_forward_reference():
    # twenty-fourth round (discord.py): `from .view import View` → `BaseView` under TYPE_CHECKING, then
    # `TypeVar('V', bound='View', covariant=True)`; not a string that only holds the word, nor a lower-case name
    old, new = "    from .view import View\n", "    from .view import BaseView\n"
    text = new + "\nlabel = 'View all'\n_DEPRECATED = (\n    'View',\n)\n" \
        "V = TypeVar('V', bound='View', covariant=True)\n"
    edit = propagate(EditEvent("a.py", 0, old, new), text, len(new), "python")
    assert edit is not None and text[:edit.start].endswith("bound='") and edit.text == "BaseView"
    old, new = "    from .view import view\n", "    from .view import base_view\n"
    assert propagate(EditEvent("a.py", 0, old, new), new + "key = 'view'\n", len(new), "python") is None
