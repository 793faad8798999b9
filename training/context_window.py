"""The context window: how many tokens (prompt plus response) a run's model takes, and the refusal of a run whose
prompts plus `max_response_tokens` do not fit in it (never a silent cap of the responses).

No torch and no Django here: the web app and the CLI check a launch with `launch_context_errors` (the window from
the model's config.json or a preset's constant, prompt lengths from its tokenizer.json through the `tokenizers`
library); the worker checks again at run start (`check_session_prompts`) with the prompt ids it will sample from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from training.models.presets import PRESET_WINDOWS, READY_MARKER
from training.prompting import INSTRUCTION, prompt_text

# Names Hugging Face configs give the longest sequence; where several are present the smallest counts (as vLLM).
WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length", "max_seq_length",
               "seq_length", "seq_len")
# Rope scalings whose config already names the stretched window, so their factor is not applied again (vLLM 0.32's
# rule, as transformers' YaRN code assumes); any other type with a factor (linear, dynamic) stretches it.
SCALED_WINDOW_ROPE_TYPES = ("default", "su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


class ContextWindowError(ValueError):
    """A run whose prompts plus max_response_tokens do not fit in the context window; `errors`: field -> why."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        super().__init__("; ".join(self.errors.values()))


def config_window(config: Mapping[str, Any]) -> int | None:
    """The context window a Hugging Face config (as a dict) gives, or None when it names none.

    A vision-language config holds it in text_config; a rope scaling of a stretching type (linear, dynamic)
    multiplies it by its factor, as vLLM does; YaRN, llama3 and longrope configs name the stretched window already.
    """
    text_config = config.get("text_config")
    if isinstance(text_config, Mapping) and any(_positive_int(text_config.get(key)) for key in WINDOW_KEYS):
        config = text_config
    windows = [value for key in WINDOW_KEYS if (value := _positive_int(config.get(key)))]
    if not windows:
        return None
    window = min(windows)
    rope = config.get("rope_scaling") or config.get("rope_parameters")
    rope_type = (rope.get("rope_type") or rope.get("type")) if isinstance(rope, Mapping) else None
    if rope_type and rope_type not in SCALED_WINDOW_ROPE_TYPES and "gemma3" not in str(config.get("model_type")):
        factor = rope.get("factor")
        if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 1:
            window = int(window * factor)
    return window


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def folder_window(folder: str | Path) -> int | None:
    """The window of the model in a local folder (its config.json), or None when it has no readable one."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return config_window(config) if isinstance(config, dict) else None


def model_folder(model: str, models_dir: str | Path | None = None) -> Path | None:
    """The local folder holding a model's files: a preset already created in models_dir, a local folder, or a
    hub id's snapshot in the local Hugging Face cache; None when there is none here (nothing is downloaded)."""
    from common.path_rules import HUB_ID, looks_like_path

    if model in PRESET_WINDOWS:
        folder = Path(models_dir) / model if models_dir is not None else None
        return folder if folder is not None and (folder / READY_MARKER).exists() else None
    folder = Path(model).expanduser()
    if folder.is_dir():
        return folder
    if looks_like_path(model) or not HUB_ID.fullmatch(model):
        return None
    from training.models.resolve import cached_hub_snapshot

    try:
        cached = cached_hub_snapshot(model)
    except Exception:  # a malformed id or an unreadable cache: unknown here, the worker checks at run start
        return None
    return Path(cached) if cached else None


def model_window(model: str, models_dir: str | Path | None = None) -> int | None:
    """A model's own context window without loading it: a preset's constant, or the config.json of its local
    folder (or cached hub snapshot); None when unknown here (a hub id not cached: the worker checks at run start)."""
    if model in PRESET_WINDOWS:
        return PRESET_WINDOWS[model]
    folder = model_folder(model, models_dir)
    return folder_window(folder) if folder is not None else None


def _knob(config: Any, name: str, default: Any = None) -> Any:
    """A knob of an RLConfig or of a config mapping (the web app's resolved config)."""
    if isinstance(config, Mapping):
        return config.get(name, default)
    return getattr(config, name, default)


def effective_window(config: Any, window: int | None) -> int | None:
    """The window a run uses: the model's, lowered by max_model_len when set; None when neither is known."""
    known = [value for value in (window, _knob(config, "max_model_len")) if value is not None]
    return min(known) if known else None


def context_window_errors(config: Any, window: int | None, prompt_lengths: Mapping[str, int] | None,
                          model: str | None = None) -> dict[str, str]:
    """Why the run does not fit in its context window, by field (empty when it fits or the window is unknown).

    `window` is the model's own window (None = unknown), `prompt_lengths` the prompt tokens by prompt id (None =
    not counted here). A prompt plus max_response_tokens must fit: prompt + response <= window.
    """
    model = model if model is not None else str(_knob(config, "model", "?"))
    limit = _knob(config, "max_model_len")
    response = _knob(config, "max_response_tokens", 0)
    if limit is not None and window is not None and limit > window:
        return {"max_model_len": f"max_model_len ({limit}) exceeds the context window of {window} tokens of model "
                                 f"{model}; it may only lower it: set at most {window} or leave it empty"}
    effective = effective_window(config, window)
    if effective is None:
        return {}
    lowered = limit is not None and (window is None or limit < window)  # max_model_len sets the window
    if lowered:
        own = f"model {model}'s own is {window}" if window is not None else f"model {model}'s own is not known here"
        where = f"the context window of {effective} tokens set by max_model_len ({own})"
    else:
        where = f"the context window of {effective} tokens of model {model}"
    or_raise = ", or raise max_model_len" if lowered else ""
    errors = {}
    if response >= effective:
        errors["max_response_tokens"] = (f"max_response_tokens ({response}) leaves no room for a prompt in {where}; "
                                          f"lower max_response_tokens below {effective}{or_raise}")
    elif prompt_lengths:
        too_long = {prompt: length for prompt, length in prompt_lengths.items() if length >= effective}
        if too_long:
            prompt, length = max(too_long.items(), key=lambda item: item[1])
            others = len(too_long) - 1
            more = f" ({others} more prompt{' is' if others == 1 else 's are'} too long too)" if others else ""
            errors["prompt_set"] = (f"prompt {prompt} alone is {length} tokens, which fills {where} and leaves no "
                                    f"room for a response{more}; shorten or remove it{or_raise}")
        else:
            prompt, length = max(prompt_lengths.items(), key=lambda item: item[1])
            if length + response > effective:
                over = sum(1 for value in prompt_lengths.values() if value + response > effective)
                more = f"; {over} prompts do not fit" if over > 1 else ""
                errors["max_response_tokens"] = (
                    f"max_response_tokens ({response}) plus the longest prompt ({length} tokens, prompt {prompt}) "
                    f"exceeds {where}{more}; lower max_response_tokens to at most {effective - length}"
                    f"{', raise max_model_len' if lowered else ''} or shorten the prompt")
    if _knob(config, "warmup_sft_steps", 0) > 0 and _knob(config, "warmup_sft_sequence_length", 0) > effective:
        errors["warmup_sft_sequence_length"] = (
            f"warmup_sft_sequence_length ({_knob(config, 'warmup_sft_sequence_length')}) exceeds {where}; lower "
            f"warmup_sft_sequence_length to at most {effective}{or_raise}")
    return errors


def check_context_window(config: Any, window: int | None, prompt_lengths: Mapping[str, int] | None,
                         model: str | None = None) -> None:
    """Raise ContextWindowError (a ValueError) naming the knob and the numbers when the run does not fit."""
    errors = context_window_errors(config, window, prompt_lengths, model)
    if errors:
        raise ContextWindowError(errors)


def check_session_prompts(config: Any, window: int | None, prompts: Mapping[str, int]) -> None:
    """Worker side, at run start: every prompt's token count (by prompt id) plus max_response_tokens against the
    window of the model about to be loaded (training.models.loading.loaded_model_window); ContextWindowError
    before any warm-up or rollout."""
    check_context_window(config, window, prompts, _knob(config, "model"))


# --- prompt lengths without torch (the launch check) ---

def _tokenizer_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _chat_template(folder: Path, tokenizer_config: Mapping[str, Any]) -> str | None:
    """The tokenizer's chat template: chat_template.jinja, else tokenizer_config.json's (its default one)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    template = tokenizer_config.get("chat_template")
    if isinstance(template, list):
        named = {item.get("name"): item.get("template") for item in template if isinstance(item, Mapping)}
        template = named.get("default")
    return template if isinstance(template, str) and template else None


def _special_tokens(tokenizer_config: Mapping[str, Any]) -> dict[str, str]:
    """bos_token, eos_token... as the template sees them (transformers passes its special tokens map)."""
    tokens = {}
    for name in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        value = tokenizer_config.get(name)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            tokens[name] = value
    return tokens


def _render_chat(template: str, tokenizer_config: Mapping[str, Any]):
    """problem -> the chat prompt text, rendered as transformers' apply_chat_template does (sandboxed jinja)."""
    from datetime import datetime

    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                extensions=[jinja2.ext.loopcontrols])
    environment.filters["tojson"] = lambda value, ensure_ascii=False, indent=None, separators=None, sort_keys=False: (
        json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys))
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    compiled = environment.from_string(template)
    special = _special_tokens(tokenizer_config)

    def render(problem: str) -> str:
        messages = [{"role": "user", "content": f"{problem}\n\n{INSTRUCTION}"}]
        return compiled.render(messages=messages, tools=None, documents=None, add_generation_prompt=True, **special)

    return render


def folder_prompt_lengths(folder: str | Path, problems: Mapping[str, str]) -> dict[str, int] | None:
    """Prompt tokens by prompt id as training.prompting.prompt_ids makes them (the chat template when the tokenizer
    has one, else the plain one), counted with tokenizer.json through `tokenizers` (no torch); None when the folder
    has no tokenizer.json or its template cannot be rendered here."""
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file():
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        tokenizer_config = _tokenizer_config(folder)
        template = _chat_template(folder, tokenizer_config)
        ids = list(problems)
        if template:
            render = _render_chat(template, tokenizer_config)
            encodings = tokenizer.encode_batch([render(problems[key]) for key in ids], add_special_tokens=False)
        else:
            encodings = tokenizer.encode_batch([prompt_text(problems[key]) for key in ids], add_special_tokens=True)
    except Exception:  # an unreadable tokenizer or a template this renderer cannot run: the worker checks exactly
        return None
    return {key: len(encoding.ids) for key, encoding in zip(ids, encodings)}


def launch_context_errors(config: Any, problems: Mapping[str, str] | Callable[[], Mapping[str, str]],
                          models_dir: str | Path | None, label: Callable[[str], str] | None = None) -> dict[str, str]:
    """The launch check (web app and CLI, no torch): field -> why the run cannot fit in its context window.

    The window comes from the preset's constant or the model's local config.json; prompt lengths from its local
    tokenizer (a preset not created yet, or a hub id not cached here: max_response_tokens alone is checked when the
    window is known, the prompts at run start). `problems`: problem text by prompt id, or a function returning them
    (called only when the tokenizer is here); `label` turns a prompt id into how a message names it.
    """
    model = str(_knob(config, "model"))
    window = model_window(model, models_dir)
    if window is None and _knob(config, "max_model_len") is None:
        return {}
    folder = model_folder(model, models_dir)
    lengths = None
    if folder is not None:
        problems = problems() if callable(problems) else problems
        lengths = folder_prompt_lengths(folder, problems) if problems else None
    if lengths is not None and label is not None:
        lengths = {label(key): length for key, length in lengths.items()}
    return context_window_errors(config, window, lengths, model)
