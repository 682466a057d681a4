"""v1model pipeline of p4switch: ``Pipeline(program)`` implements ``api.PipelineAPI``."""

from .codegen import BuildError
from .pipeline import Pipeline

__all__ = ["BuildError", "Pipeline"]
