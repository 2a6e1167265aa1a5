"""Sample Video API: an example provider plug-in for ReelQueue (the adapter is
:mod:`reelqueue_sample.provider`, one file)."""
