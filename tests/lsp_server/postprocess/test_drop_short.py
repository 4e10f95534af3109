from lsp_server.postprocess.drop_short import drop_short
from tests.lsp_server.postprocess.helpers import ctx


def test_blank_dropped():
    assert drop_short(" \n\t", ctx("x = ║")) is None


def test_short_kept_by_default_and_threshold_configurable():
    assert drop_short("0", ctx("x = ║")) == "0"  # a one-character completion can be exactly right
    assert drop_short(" )) ", ctx("x = ║", min_chars=4)) is None
    assert drop_short("abcd", ctx("x = ║", min_chars=4)) == "abcd"
    assert drop_short("ab", ctx("x = ║", min_chars=2)) == "ab"
