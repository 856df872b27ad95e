"""Versions of this package and of the plugin jar it belongs to (they are released together)."""

#: This package's version (PEP 440 spelling of the jar's).
__version__ = "0.1.0.dev0"
#: The version of the spark-collective plugin jar this package speaks to, as the jar states it.
PLUGIN_VERSION = "0.1.0-SNAPSHOT"
