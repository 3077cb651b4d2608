# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A training job's traffic, controller side (issue 26): ``spec`` (the job description, validated), ``algorithms``
(collectives as transfers with their data dependencies), ``program`` (per-host programs, docs/job-contract.md
section 1), ``analysis`` (the report's figures from the hosts' times, section 2) and ``sweep`` (nccl-tests' size
sweep and table). The prediction is ``_model.dag``. See docs/jobs.md."""
