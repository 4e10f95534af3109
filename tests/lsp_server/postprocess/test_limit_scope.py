from lsp_server.postprocess.limit_scope import limit_scope
from tests.lsp_server.postprocess.helpers import ctx


def test_stops_after_the_block_closes():
    c = ctx("class A {\n  get x() {║\n}\n", language="typescript")
    item = "\n    return 1;\n  }\n\n  set x(v) {\n    this._x = v;\n  }"
    assert limit_scope(item, c) == "\n    return 1;\n  }"


def test_completing_a_line_keeps_one_statement():
    c = ctx("function f() {\n  this.a =║\n}\n", language="javascript")
    assert limit_scope(" 1;\n  return this;", c) == " 1;"


def test_else_branch_continues():
    c = ctx("fn f() {\n    if x {║\n}\n", language="rust")
    item = "\n        a()\n    } else {\n        b()\n    }\n    c()"
    assert limit_scope(item, c) == "\n        a()\n    } else {\n        b()\n    }"


def test_closing_line_kept_when_code_after_is_outside_the_block():
    # The `}` stays here; drop_duplicated_closing_line then removes it as a copy of the suffix's `    }`.
    c = ctx("fn f() {\n    if x {║\n    }\n}\n", language="rust")
    assert limit_scope("\n        a()\n    }\n    b()", c) == "\n        a()\n    }"


def test_closing_line_not_kept_when_code_after_is_inside_the_block():
    c = ctx("fn f() {\n    if x {║\n        more()\n    }\n}\n", language="rust")
    assert limit_scope("\n        a()\n    }\n    b()", c) == "\n        a()"


def test_python_new_definition_after_blank_line_cut():
    c = ctx("def f():\n    ║\n")
    assert limit_scope("return 1\n\ndef g():\n    pass", c) == "return 1"


def test_body_at_deeper_level_untouched():
    c = ctx("def f(n):\n    ║\n    return n\n")
    item = "if n < 2:\n        return n"
    assert limit_scope(item, c) == item


def test_single_line_untouched():
    assert limit_scope("x", ctx("a = ║")) == "x"


def test_reopening_line_without_its_body_is_not_left_dangling():
    c = ctx("fn f() {\n    let a = ║\n}\n", language="rust")
    # `} else {` closes and reopens, but its body (`  x`) is outside the scope and cut, so it goes as well.
    assert limit_scope("1;\n} else {\n  x\ny", c) == "1;"


def test_comma_continues_a_list_at_the_same_indentation():
    c = ctx("point = {\n    'x': ║\n}\n")
    assert limit_scope("1,\n    'y': 2,\n}\nprint(point)", c) == "1,\n    'y': 2,"


def test_reopening_line_cut_when_code_after_is_inside_the_block():
    # HumanEval/1: the cursor ends an `elif` body whose code goes on below the blank line; a second `elif` written
    # there would swallow that code.
    c = ctx("for c in s:\n    if c == '(':\n        d += 1\n    elif c == ')':\n        d -= 1\n║\n\n"
            "        if d == 0:\n            r.append(c)\n")
    item = "        cur.append(c)\n    elif c == ')':\n        d -= 1"
    assert limit_scope(item, c) == "        cur.append(c)"


def test_reopening_line_kept_when_code_after_is_outside_the_block():
    c = ctx("def f(x):\n    if x:\n        a()\n║\n    return 1\n")
    item = "        b()\n    else:\n        c()"
    assert limit_scope(item, c) == item


def test_reopening_line_kept_when_it_ends_the_item_above_its_body():
    # HumanEval multi-line: the hole is a body line and the next `elif`, whose body is the code below
    c = ctx("def g(x):\n    if x > 2:\n        a()\n    elif x > 1:\n║\n        c()\n")
    item = "        b()\n    elif x > 0:"
    assert limit_scope(item, c) == item
    assert limit_scope(item + "\n        d()", c) == "        b()"  # with a body of its own it would take c()
    js = ctx("if (a) {\n  if (b) {\n    x();\n║\n    y();\n  }\n}\n", language="javascript")
    assert limit_scope("    z();\n  } else {", js) == "    z();\n  } else {"
    assert limit_scope("    z();\n  }", js) == "    z();"  # a bare closer would end the block above y()


def test_an_item_that_rejoined_the_code_below_is_not_cut():
    # the model wrote the next line of code after the hole: what comes before is exactly the hole, across blocks
    document = "for i in r:\n    for j in r:\n        if i % j == 0:\n║\n    return p\n"
    item = "            q = False\n    if q:\n        p.append(i)"
    assert limit_scope(item, ctx(document)) == "            q = False"
    assert limit_scope(item, ctx(document, rejoined=True)) == item


def test_a_chain_that_goes_on_below_keeps_only_the_closer():
    # SantaCoder JavaScript: the hole is the `}` above an existing `else if`; the model wrote branches of its own.
    c = ctx("for (;;) {\n    if (a) {\n        x();\n║\n    else if (b) {\n        y();\n    }\n}\n",
            language="javascript")
    assert limit_scope("    } else if (c) {\n        z();\n    } else if (d) {", c) == "    }"
    assert limit_scope("    } else if (c) {", c) == "    }"
    assert limit_scope("    }\n    else if (c) {\n        z();", c) == "    }"


def test_a_closing_and_reopening_line_is_kept_where_no_clause_follows_below():
    c = ctx("for (;;) {\n    if (a) {\n        x();\n║\n    y();\n}\n", language="javascript")
    assert limit_scope("    } else {\n        z();\n    }", c) == "    } else {\n        z();\n    }"


def test_a_new_callback_opened_where_the_code_below_closes_the_block_is_cut():
    # rxjs skipUntil: the cursor in the first callback's body; the model closed it and invented a second callback,
    # which the code below (`},` then `noop`) would have closed.
    c = ctx("f(\n  subscriber,\n  () => {\n    s.unsubscribe();\n    ║\n  },\n  noop\n);\n", language="typescript")
    item = "taking = true;\n  }, () => {\n    const value = source.value;\n    taking = false;"
    assert limit_scope(item, c) == "taking = true;"


def test_an_added_clause_above_the_closer_is_kept():
    c = ctx("if (a) {\n  foo();\n  ║\n}\nbar();\n", language="javascript")
    item = "baz();\n} else {\n  qux();"
    assert limit_scope(item, c) == item
