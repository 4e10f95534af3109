"""Snippets from other files in each prompt form: path-labelled comment blocks at the top of the prefix, the
family's repository form, llama-server's input_extra, and FIM-native remote APIs."""

from __future__ import annotations

from engine.backends.llama_cpp import completion_body
from engine.prompt import PromptTemplate, build_prompt
from engine.types import CompletionOptions, CompletionRequest, ContextSnippet

SNIPPETS = (ContextSnippet("pkg/util.py", "def helper(x):\n    return x + 1"),
            ContextSnippet("pkg/more.py", "LIMIT = 3\n"))
REQUEST = CompletionRequest(prefix="import pkg\nvalue = ", suffix="\nprint(value)\n", language="python",
                            filepath="/w/pkg/main.py", context=SNIPPETS, repo="myrepo", relative_path="pkg/main.py")


async def build(template: PromptTemplate, request: CompletionRequest = REQUEST, **kwargs):
    return await build_prompt(request, template, max_prefix_tokens=256, max_suffix_tokens=64, line_comment="#",
                              **kwargs)


async def test_prefix_only_gets_path_labelled_blocks_at_the_top_of_the_prefix():
    prompt = await build(PromptTemplate.from_setting(None))
    assert prompt.text == ("# Path: pkg/util.py\ndef helper(x):\n    return x + 1\n"
                           "# Path: pkg/more.py\nLIMIT = 3\n"
                           "# Path: pkg/main.py\nimport pkg\nvalue = ")
    assert prompt.prefix == "import pkg\nvalue = "  # the stop rules still see the real prefix
    assert prompt.context == SNIPPETS


async def test_a_family_without_a_repo_form_gets_the_blocks_inside_its_prefix_marker():
    prompt = await build(PromptTemplate.from_setting("codellama"))
    assert prompt.text.startswith("<PRE> # Path: pkg/util.py\ndef helper(x):")
    assert "# Path: pkg/main.py\nimport pkg\nvalue =  <SUF>\nprint(value)\n <MID>" in prompt.text


async def test_qwen_gets_its_repository_form():
    prompt = await build(PromptTemplate.from_setting("qwen2.5-coder"))
    assert prompt.text == ("<|repo_name|>myrepo\n"
                           "<|file_sep|>pkg/util.py\ndef helper(x):\n    return x + 1\n"
                           "<|file_sep|>pkg/more.py\nLIMIT = 3\n"
                           "<|file_sep|>pkg/main.py\n"
                           "<|fim_prefix|>import pkg\nvalue = <|fim_suffix|>\nprint(value)\n<|fim_middle|>")


async def test_starcoder2_gets_its_repository_form():
    prompt = await build(PromptTemplate.from_setting("starcoder2"))
    assert prompt.text.startswith("<repo_name>myrepo<file_sep>pkg/util.py\ndef helper(x):\n    return x + 1\n"
                                  "<file_sep>pkg/more.py\nLIMIT = 3\n<file_sep><fim_prefix>import pkg")


async def test_native_context_leaves_the_text_alone_and_llama_server_gets_input_extra():
    template = PromptTemplate(name="model-fim-tokens", template="{prefix}{suffix}")
    prompt = await build(template, native_context=True)
    assert prompt.text == "import pkg\nvalue = \nprint(value)\n"
    body = completion_body(prompt, CompletionOptions(seed=1), use_infill=True)
    assert body["input_extra"] == [{"filename": "pkg/util.py", "text": "def helper(x):\n    return x + 1"},
                                   {"filename": "pkg/more.py", "text": "LIMIT = 3\n"}]
    assert body["input_prefix"] == "import pkg\nvalue = "
    assert "input_extra" not in completion_body(prompt, CompletionOptions(seed=1), use_infill=False)


async def test_fim_native_remote_apis_get_the_blocks_in_front_of_the_prefix():
    from engine.backends.openai import OpenAICompletion

    prompt = await build(PromptTemplate.from_setting(None))
    body = OpenAICompletion("http://127.0.0.1:9", model="m", fim=True).build_body(prompt, CompletionOptions(seed=1))
    assert body["prompt"].startswith("# Path: pkg/util.py\n") and body["prompt"].endswith("import pkg\nvalue = ")


async def test_without_context_every_form_is_unchanged():
    bare = CompletionRequest(prefix="a = ", suffix="\n", language="python")
    for name in (None, "qwen2.5-coder", "starcoder2", "codellama"):
        template = PromptTemplate.from_setting(name)
        prompt = await build(template, bare)
        assert prompt.text == template.render("a = ", "\n") and prompt.context_block == ""


async def test_no_line_comment_means_no_blocks_and_placeholders_in_snippets_stay_literal():
    odd = CompletionRequest(prefix="p", context=(ContextSnippet("a{text}.py", "x = '{prefix}{repo}'"),))
    assert (await build_prompt(odd, PromptTemplate.from_setting(None), max_prefix_tokens=64, max_suffix_tokens=0,
                               line_comment=None)).text == "p"
    qwen = await build(PromptTemplate.from_setting("qwen2.5-coder"), odd)
    assert "<|file_sep|>a{text}.py\nx = '{prefix}{repo}'\n" in qwen.text
