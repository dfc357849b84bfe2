"""Knowledge distillation: teacher -> DistilBERT-style student through
`model.fit`.

    student = make_student(teacher, num_layers=3)        # teacher layers 0, 2, 4
    distiller = Distiller(teacher, student)               # T=2, soft 5 / hard 2 / cos 1
    distiller.compile(optimizer=make_adamw(student, 5e-5, steps))
    distiller.fit(train_ds, validation_data=val_ds)
    distiller.student                                     # the trained student
"""

from zoo.distill.distiller import Distiller
from zoo.distill.student_init import default_layer_map, make_student

__all__ = ["Distiller", "default_layer_map", "make_student"]
