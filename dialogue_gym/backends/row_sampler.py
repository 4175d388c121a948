"""Per-request sampling inside one batched ``model.generate``: every row draws from a generator of its own.

``generate``'s own sampling (``torch.multinomial`` over the whole batch) draws every row's token from one
generator, so a row's sample depends on the rows drawn with it: a reply would change with its batch-mates,
the batch size and the vector width. The project's rule is that the same seed gives the same transcript in
every view, so the transformers backend runs ``generate`` greedily and lets :class:`TokenPicker`, its last
logits processor, choose each row's token: ``argmax`` under greedy decoding, otherwise by inverse CDF from
that row's own uniforms (:func:`row_uniforms`, drawn from a generator seeded with the request's seed
alone). It returns scores whose ``argmax`` is that token, and records the token's log-probability under
the processed scores it was drawn from.

This module imports ``torch`` and ``transformers``; the backend imports it when it loads a model.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import LogitsProcessor


def row_uniforms(seeds: Sequence[int | None], steps: int, device: torch.device) -> torch.Tensor:
    """``(len(seeds), steps)`` uniforms in ``[0, 1)``, float64: row ``i`` from a CPU generator seeded with
    ``seeds[i]`` alone (the same on every device), or from torch's global generator where it is ``None``."""
    rows = []
    for seed in seeds:
        generator = None if seed is None else torch.Generator().manual_seed(seed)
        rows.append(torch.rand(steps, generator=generator, dtype=torch.float64))
    return torch.stack(rows).to(device)


def inverse_cdf(scores: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Row ``i``'s token drawn from ``softmax(scores[i])`` with the uniform ``uniforms[i]``: the first token
    whose cumulative probability exceeds ``uniforms[i]`` of the total, so a token of probability 0 (removed
    by ``top_p``) is never drawn."""
    probs = torch.softmax(scores, dim=-1)
    cdf = probs.double().cumsum(dim=-1)
    index = torch.searchsorted(cdf, (uniforms * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    # ``uniform * total`` can round up to the total (about once in 2**53 draws), which points past the
    # end: take the last token of probability > 0 then, the one the draw was closest to.
    last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).int().argmax(dim=-1)
    return torch.minimum(index, last)


class TokenPicker(LogitsProcessor):
    """The last logits processor of a greedy ``generate`` call: chooses each row's next token and makes
    it the ``argmax``.

    Args:
        uniforms: ``(rows, max_new_tokens)`` from :func:`row_uniforms` (step ``t`` of row ``i`` draws with
            ``uniforms[i, t]``), or ``None`` for greedy decoding.

    Attributes:
        logprobs: per step, each row's chosen token's log-softmax of the processed scores (those it was
            drawn from: temperature and ``top_p`` applied), shape ``(rows,)``.
    """

    def __init__(self, uniforms: torch.Tensor | None) -> None:
        self.uniforms = uniforms
        self.logprobs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.uniforms is None:
            chosen = scores.argmax(dim=-1)
        else:
            chosen = inverse_cdf(scores, self.uniforms[:, len(self.logprobs)])
        logp = torch.log_softmax(scores.float(), dim=-1)
        self.logprobs.append(logp.gather(1, chosen.unsqueeze(1)).squeeze(1))
        picked = torch.full_like(scores, float("-inf"))
        return picked.scatter_(1, chosen.unsqueeze(1), 0.0)
