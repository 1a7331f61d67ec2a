from django.apps import AppConfig


class ProposalsConfig(AppConfig):
    name = "proposals"

    def ready(self):
        # The built-in tools register their handlers on import.
        from proposals.handlers import helper_dispatch, provenance, routines  # noqa: F401
        from proposals.settings_check import helper_hosts_setting_check

        helper_hosts_setting_check()
