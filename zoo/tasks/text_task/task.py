"""`TextTaskMixin`, the class the text models extend: the preprocessor
checked and attached, and the jobs of the mixins it gathers (compile,
tables, fit/evaluate, saving)."""

from __future__ import annotations

from zoo.models import task_of
from zoo.tasks.text_task.compiling import CompileMixin
from zoo.tasks.text_task.saving import SavingMixin
from zoo.tasks.text_task.tables import TablesMixin
from zoo.tasks.text_task.training import FitMixin
from zoo.text.preprocessor import TextPreprocessor


class TextTaskMixin(CompileMixin, TablesMixin, FitMixin, SavingMixin):
    """What the text models share: the preprocessor, default compile, the
    text-or-ids dispatch of fit/evaluate/predict, config and loading."""

    def _init_text(self, preprocessor, seed):
        if not isinstance(preprocessor, TextPreprocessor):
            raise TypeError(
                f"{type(self).__name__}: `preprocessor` must be a zoo.TextPreprocessor; received "
                f"{type(preprocessor).__name__}. Use {type(self).__name__}.from_checkpoint(path) "
                "or zoo.TextPreprocessor(tokenizer, sequence_length=...)."
            )
        longest = self.encoder.max_sequence_length
        if preprocessor.sequence_length > longest:
            raise ValueError(
                f"{type(self).__name__}: the preprocessor packs {preprocessor.sequence_length} "
                f"tokens but the encoder takes at most {longest} (its max_sequence_length); "
                f"give sequence_length <= {longest} (long texts: max_windows)."
            )
        self.preprocessor = preprocessor
        self.seed = int(seed)
        self._epochs_done = 0  # earlier fit calls: the next one shuffles and drops on
        self._compile_args = (
            None  # set by `compile`; until then fit/evaluate compile with defaults
        )

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    @property
    def sequence_length(self):
        return self.preprocessor.sequence_length

    @property
    def task(self):
        return task_of(self)
