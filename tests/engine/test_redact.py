"""The one redaction function that keeps keys out of logs and error messages (engine backends and the LSP log)."""

from engine.redact import redact


def test_configured_secrets_and_bearer_tokens():
    assert redact("key sk-abc in Authorization: Bearer sk-abc", ("sk-abc",)) == \
        "key *** in Authorization: Bearer ***"
    assert redact('{"auth": "Bearer abc.def"}') == '{"auth": "Bearer ***"}'


def test_credential_shaped_values_without_configuration():
    assert redact("calling with api_key=abcdef123456 now") == "calling with api_key=*** now"
    assert redact('{"x-api-key": "abcdefgh"}') == '{"x-api-key": "***"}'
    assert redact("key sk-abcdefghijklmnop used") == "key sk-*** used"
    assert redact("token hf_abcdefghijklmnop") == "token hf_***"


def test_short_secrets_and_ordinary_words_stay():
    assert redact("a b c", ("a", None, "")) == "a b c"
    assert redact("max_tokens: 64, stop_type: limit") == "max_tokens: 64, stop_type: limit"

