"""The live provider adapters, one module each. Each module's ``INFO`` describes it (kind,
factory, parameters, row rules); :mod:`reelqueue.providers.builtin` lists them."""
