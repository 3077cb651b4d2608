# -*- coding: utf-8 -*-
"""A stand-in for AnsibleModule in the tests of a module's glue (``module_utils/_<name>_module.py``): the parameters
as AnsibleModule would hand them over, check and diff mode, and what ``exit_json``/``fail_json``/``warn`` were given.
``exit_json`` and ``fail_json`` end the call as the real ones do (``Done`` here, ``SystemExit`` there)."""
from __future__ import annotations


class Done(Exception):
    """exit_json or fail_json was called."""


class ModuleLike:
    def __init__(self, params, check_mode=False, diff=True):
        self.params = params
        self.check_mode, self._diff = check_mode, diff
        self.warnings, self.result = [], None

    def warn(self, msg):
        self.warnings.append(msg)

    def exit_json(self, **kw):
        self.result = kw
        raise Done()

    def fail_json(self, **kw):
        self.result = dict(kw, failed=True)
        raise Done()
