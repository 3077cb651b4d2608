"""Stand-in for ansible-test's downloaded get-pip script (its host is out of reach here).

ansible-test runs this with the target venv's python and get-pip's arguments (``pip==24.2``, ``setuptools==...``,
``--no-wheel``...). It bootstraps the pip that ships with Python (ensurepip, no network), then installs the exact
versions asked for from the package index, which this machine reaches.
"""
import ensurepip
import os
import subprocess
import sys

# ensurepip points PIP_CONFIG_FILE at /dev/null in this process (and drops PIP_* variables) for its offline install;
# the install from the index needs the machine's pip configuration back (its CA bundle, where a proxy re-signs TLS:
# a Python whose pip trusts only certifi's bundle, such as pyenv's, fails without it).
environment = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
wanted = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
if wanted:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"] + wanted,
                          env=environment)
