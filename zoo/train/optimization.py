"""AdamW with linear warmup and linear decay, no weight decay on LayerNorm
and biases: BERT's fine-tuning optimizer, from Keras's own parts (the
schedule lives in `zoo.utils.schedules`, where model loaders can register it)."""

from __future__ import annotations

from zoo.utils.schedules import AdamW, WarmupLinearDecay

# Variable-name fragments excluded from weight decay, as in BERT.
NO_DECAY = ("layer_norm", "LayerNorm", "bias", "beta", "gamma")


def make_adamw(
    model,
    learning_rate,
    total_steps,
    warmup_fraction=0.1,
    weight_decay=0.01,
    clipnorm=1.0,
    gradient_accumulation=1,
    beta_2=0.999,
):
    """AdamW for `model` with BERT's schedule and decay exclusions.

    `total_steps` counts training steps (batches). With
    `gradient_accumulation` N > 1 the optimizer averages the gradients of N
    steps into one update (Keras's `gradient_accumulation_steps`) and the
    schedule counts updates (total_steps / N, rounded up): N steps of
    batch B train as one step of batch N x B. `beta_2` is Adam's (0.999,
    BERT's; RoBERTa's recipe takes 0.98)."""
    n = int(gradient_accumulation)
    updates = -(-int(total_steps) // n)
    schedule = WarmupLinearDecay(
        learning_rate, updates, int(round(warmup_fraction * updates)), steps_per_update=n
    )
    optimizer = AdamW(
        learning_rate=schedule,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=beta_2,
        epsilon=1e-6,
        clipnorm=clipnorm,
        gradient_accumulation_steps=n if n > 1 else None,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
