"""`python -m catalog.check`: load every entry and print how stated totals compare with the architecture."""

from __future__ import annotations

from catalog.arch import active_decoder_params, stated_vs_derived
from catalog.store import load_catalog


def main() -> None:
    cat = load_catalog()
    print(f"{len(cat.gpus)} GPUs, {len(cat.models)} models, {len(cat.quants)} formats, version {cat.version}")
    for m in cat.models:
        diff = stated_vs_derived(m)
        active = active_decoder_params(m) / 1e9
        flag = "  <-- check" if abs(diff) > 0.03 else ""
        print(
            f"{m.id:40s} stated {m.params_b:8.2f}B  derived-diff {diff:+7.2%}  active(derived) {active:7.2f}B"
            f" stated {m.active_params_b:7.2f}B{flag}"
        )


if __name__ == "__main__":
    main()
