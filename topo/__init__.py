"""The emulated fabric: Mininet topologies and nodes built from a ``model.spec.FabricSpec``,
``FabricNet``, the launcher and fabric CLI (``python -m topo``), JSON topologies."""
