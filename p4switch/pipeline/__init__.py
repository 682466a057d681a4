"""v1model pipeline of p4switch: ``Pipeline(program)`` implements ``api.PipelineAPI``.

Importing the package declares the v1model externs into the extern registry (``v1model.register``):
the registry itself imports no generator, so the package has no import cycle.
"""

from . import v1model
from .emit import BuildError
from .pipeline import Pipeline

v1model.register()

__all__ = ["BuildError", "Pipeline"]
