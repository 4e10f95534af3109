from lsp_server.postprocess.reindent import fix_odd_indent, reindent
from tests.lsp_server.postprocess.helpers import ctx


def test_spaces_to_tabs_in_a_tab_document():
    c = ctx("func f() {\n\tif x {\n\t\t║\n\t}\n}\n", language="go", indent_unit="    ")
    assert reindent("a()\n        b()\n    c()", c) == "a()\n\t\tb()\n\tc()"


def test_new_file_takes_the_editor_unit():
    c = ctx("def f():║", indent_unit="    ")
    assert reindent("\n  if x:\n    return 1", c) == "\n    if x:\n        return 1"


def test_space_units_in_an_indented_document_left_alone():
    c = ctx("def f():\n    x = 1\n    ║\n")
    item = "if x:\n      return 1"
    assert reindent(item, c) == item


def test_alignment_remainder_kept():
    c = ctx("x = 1║", indent_unit="\t")
    assert reindent("\n    f(a,\n      b)", c) == "\n\tf(a,\n\t  b)"


def test_first_line_after_code_untouched():
    c = ctx("\tx = ║", language="go", indent_unit="\t")
    assert reindent("f(\n        a)", c) == "f(\n\t\ta)"


def test_stray_space_on_first_line_removed():
    c = ctx("def f():\n    ║\n")
    assert fix_odd_indent(" x = 1\n    return x", c) == "x = 1\n    return x"


def test_whole_block_shifted_by_one_is_fixed():
    c = ctx("def f():\n    ║\n")
    assert fix_odd_indent(" if x:\n         y()", c) == "if x:\n        y()"


def test_on_grid_first_line_untouched():
    c = ctx("def f():\n    ║\n")
    assert fix_odd_indent("    x = 1", c) == "    x = 1"


def test_cursor_after_code_untouched():
    c = ctx("x =║\n")
    assert fix_odd_indent(" 1", c) == " 1"


def test_tab_indented_cursor_line_decides_in_a_new_file():
    c = ctx("func main() {\n\t║\n}\n", language="go", indent_unit="    ")
    assert reindent("a()\n    b()", c) == "a()\n\tb()"


def test_the_cursor_lines_tabs_outrank_space_indented_lines_around_it():
    """A tab-indented Go function whose neighbours are an embedded shell script indented with spaces: the cursor's
    line is tab-indented, so a tab-indented item stays as it is and a space-indented one gets tabs."""
    script = "".join(f"    echo {i}\n" for i in range(6))
    document = f"func f() string {{\n\ts := `\n{script}`\n\t║\n\treturn s\n}}\n"
    c = ctx(document, language="go")
    assert c.document_indent_unit == "\t"
    assert reindent("if s == \"\" {\n\t\treturn \"x\"\n\t}", c) == "if s == \"\" {\n\t\treturn \"x\"\n\t}"


def test_the_cursor_lines_spaces_outrank_tab_indented_lines_around_it():
    document = "def f():\n" + "".join(f"\tx{i} = {i}\n" for i in range(6)) + "def g():\n    ║\n"
    c = ctx(document, indent_unit="  ")
    assert c.document_indent_unit == "  "  # spaces; the width is the editor's, which the cursor line fits
    assert reindent("if x:\n\t\treturn 1", c) == "if x:\n    return 1"


def test_the_cursor_lines_width_is_the_unit_when_nothing_else_is_indented():
    """A function whose whole body is being written: the cursor line's 2 spaces are the only evidence, and they say
    the unit is 2, not the editor's default 4 (a FIM model's 2-space body stays as it is)."""
    c = ctx("function f(a) {\n  ║\n}\n", language="javascript", indent_unit="    ")
    assert c.document_indent_unit == "  "
    assert reindent("if (a) {\n    return 1;\n  }", c) == "if (a) {\n    return 1;\n  }"
