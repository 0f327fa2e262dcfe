"""Placeholder: this plugin is being built (see the open issues); it registers nothing yet."""
