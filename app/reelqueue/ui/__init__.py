"""The desktop window (PySide6 + qasync): the only package that imports Qt.

Layers: :mod:`.session` owns the engine and runs its commands (no Qt); :mod:`.bridge`
turns engine events into Qt signals; :mod:`.controller` is the thin qasync glue between
the two and the widgets; :mod:`.app` starts and ends it all (:func:`.app.run_app`).
"""
