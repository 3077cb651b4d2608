#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kernel_cmdline
short_description: Kernel arguments in the boot loader's configuration (GRUB or /etc/kernel/cmdline), with reboot status
version_added: 0.2.0
description:
  - Adds or removes kernel arguments such as C(intel_iommu=on) and C(iommu=pt) in the file the boot loader reads,
    and says whether the running kernel already has them (RV(reboot_required)).
  - "For GRUB it edits one variable of C(/etc/default/grub) (O(variable), C(GRUB_CMDLINE_LINUX) by default, which
    also applies to recovery entries); the boot loader's own configuration must then be regenerated:
    RV(update_command) says with what (C(update-grub)). For C(/etc/kernel/cmdline) (systemd-boot, kernel-install)
    the whole file is the command line."
  - A V(key=value) argument replaces another value of the same key (C(iommu=nopt) becomes C(iommu=pt)); other
    arguments are kept in their order.
author:
  - aifabric.lab contributors (@aifabric)
extends_documentation_fragment:
  - aifabric.lab.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
options:
  args:
    description:
      - Kernel arguments, each V(key=value) or a bare flag.
      - "Refused, naming the argument, when one holds whitespace, a control character (newline, NUL...), a quote or a
        character the shell that reads C(/etc/default/grub) or GRUB's own parser would act on: C($), a backtick,
        C(\\), C(;), C(&), C(|), C(<), C(>), C({), C(}), C(#). Nothing is written then."
    type: list
    elements: str
    required: true
  state:
    description: V(present) adds them; V(absent) removes them (a bare key removes every value of that key).
    type: str
    choices: [present, absent]
    default: present
  path:
    description:
      - The configuration file. By default C(/etc/default/grub), else C(/etc/kernel/cmdline), whichever exists.
    type: path
  variable:
    description: The GRUB variable to edit.
    type: str
    default: GRUB_CMDLINE_LINUX
seealso:
  - module: aifabric.lab.vfio_pci
  - module: aifabric.lab.pci_info
"""

EXAMPLES = r"""
- name: Turn the IOMMU on for VFIO (Intel)
  aifabric.lab.kernel_cmdline:
    args: [intel_iommu=on, iommu=pt]
  register: iommu_args

- name: Regenerate GRUB's configuration
  ansible.builtin.command: "{{ iommu_args.update_command }}"
  when: iommu_args is changed
  changed_when: true
"""

RETURN = r"""
path:
  description: The file edited.
  returned: success
  type: str
  sample: /etc/default/grub
args:
  description: The command line in the file after the change.
  returned: success
  type: list
  elements: str
reboot_required:
  description: Whether the running kernel booted without what the file now asks for.
  returned: success
  type: bool
update_command:
  description: The command that makes the boot loader read the new file (empty for other paths).
  returned: success
  type: list
  elements: str
  sample: [update-grub]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aifabric.lab.plugins.module_utils._kernel_cmdline_module import module_args, run_module


def main():
    run_module(AnsibleModule(**module_args()))


if __name__ == "__main__":
    main()
