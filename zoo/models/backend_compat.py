"""What the zoo's functional models need to build on every Keras backend."""

import keras


def setattr_before_init(model, name, value):
    """`model.name = value`, also before the functional model's `__init__`.

    The zoo's models create their layers (`self.embeddings = ...`) before
    `keras.Model.__init__`, as Keras's subclassed-functional pattern does. On
    PyTorch a Keras layer is a `torch.nn.Module`, which refuses a sub-module
    assigned before `Module.__init__` ("cannot assign module before
    Module.__init__() call"); until then the attribute is set plainly (the
    functional graph tracks those layers and their weights). TensorFlow and
    JAX, and every assignment after `__init__`, take Keras's own path.
    """
    if keras.backend.backend() == "torch" and "_modules" not in model.__dict__:
        object.__setattr__(model, name, value)
    else:
        keras.layers.Layer.__setattr__(model, name, value)
