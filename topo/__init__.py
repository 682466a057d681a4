"""The fabric's topology: pure descriptions (``topo.spec``) and the Mininet side built on them."""

from .spec import (
    FabricSpec,
    HostSpec,
    LinkSpec,
    SpecError,
    SwitchSpec,
    fat_tree,
    leaf_spine,
)

__all__ = ["FabricSpec", "HostSpec", "LinkSpec", "SpecError", "SwitchSpec", "fat_tree",
           "leaf_spine"]
