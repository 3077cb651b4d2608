# -*- coding: utf-8 -*-
# Copyright (c) 2026, aifabric.lab contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel arguments in the boot loader's configuration: GRUB's /etc/default/grub or /etc/kernel/cmdline."""

from __future__ import annotations

import os
import re
import shlex

from ._pci import cmdline_args, read_cmdline

GRUB = "etc/default/grub"
KERNEL_CMDLINE = "etc/kernel/cmdline"
# what to run after the file changed, so the next boot sees it (by the file's name)
UPDATE = {"grub": ["update-grub"], "cmdline": ["kernel-install", "add-all"]}


class CmdlineError(Exception):
    pass


def _split(text):
    return text.split()


def _key(word):
    return word.partition("=")[0]


def edit(words, args, state):
    """New argument list: ``present`` adds each arg (replacing another value of the same key), ``absent`` removes
    each (a bare key removes every value of it; key=value only that value). Order is kept; new args go last."""
    out = list(words)
    for arg in args:
        if state == "present":
            if arg in out:
                continue
            same = [i for i, w in enumerate(out) if _key(w) == _key(arg)]
            if same and "=" in arg:
                out[same[0]] = arg
                out = [w for i, w in enumerate(out) if i not in same[1:]]
            else:
                out.append(arg)
        else:
            out = [w for w in out if not (w == arg or ("=" not in arg and _key(w) == arg))]
    return out


# Characters that end, quote or expand inside GRUB_CMDLINE_LINUX="..." (a shell file grub-mkconfig sources) or in the
# grub.cfg line GRUB's own shell-like parser reads back (its metacharacters: { } | & $ ; < >), or that either reads as
# the start of a comment. A kernel argument never needs them.
SHELL_METACHARACTERS = {
    "$": "a shell or GRUB variable expansion",
    "`": "a shell command substitution",
    '"': "a quote that ends the GRUB_CMDLINE_LINUX string",
    "'": "a quote",
    "\\": "a shell escape",
    ";": "a command separator",
    "&": "a shell or GRUB control operator",
    "|": "a pipe",
    "<": "a redirection",
    ">": "a redirection",
    "{": "a GRUB block delimiter",
    "}": "a GRUB block delimiter",
    "#": "the start of a comment",
}


def validate(args):
    """Every argument one kernel word that the GRUB line can hold as it is: no whitespace, no control character, no
    shell or GRUB metacharacter. The error names the argument and the character."""
    for arg in args:
        if not arg:
            raise CmdlineError("args: an empty argument; give each as key=value or a bare flag")
        for char in arg:
            if char in SHELL_METACHARACTERS:
                raise CmdlineError(
                    "args: %r contains %r, %s in the GRUB_CMDLINE_LINUX line (/etc/default/grub is read by a shell, "
                    "grub.cfg by GRUB's parser); a kernel argument is key=value or a bare flag without $ ` \" ' \\ "
                    "; & | < > { } #" % (arg, char, SHELL_METACHARACTERS[char]))
            if char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F:
                raise CmdlineError("args: %r is not one kernel argument: it contains %s; give each argument as its "
                                   "own list item, as key=value or a bare flag, without spaces or control characters"
                                   % (arg, _describe_char(char)))


def validate_variable(variable):
    """The GRUB variable's name goes into the file as ``NAME="..."``: a shell name only."""
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", variable or ""):
        raise CmdlineError("variable: %r is not a shell variable name (letters, digits and _, not starting with a "
                           "digit), such as GRUB_CMDLINE_LINUX" % (variable,))


def _describe_char(char):
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL byte", " ": "a space"}
    return names.get(char, "the character %r" % char)


def read_config(path, variable):
    """``(all lines, index of the variable's line or None, its words)``."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise CmdlineError("path: cannot read %s: %s" % (path, exc.strerror)) from None
    if os.path.basename(path) == "cmdline":
        return lines, 0, _split(" ".join(lines))
    pattern = re.compile(r"^\s*%s=(.*)$" % re.escape(variable))
    found, words = None, []
    for index, line in enumerate(lines):
        match = pattern.match(line)
        if match:
            try:
                parsed = shlex.split(match.group(1), comments=True)
            except ValueError as exc:
                raise CmdlineError("path: cannot parse %s in %s: %s" % (variable, path, exc)) from None
            found, words = index, _split(" ".join(parsed))
    return lines, found, words


def render_config(path, variable, lines, index, words):
    if os.path.basename(path) == "cmdline":
        return " ".join(words) + "\n"
    line = '%s="%s"' % (variable, " ".join(words))
    lines = list(lines)
    if index is None:
        lines.append(line)
    else:
        lines[index] = line
    return "\n".join(lines) + "\n"


def find_config(root="/", path=None):
    if path:
        return path
    for rel in (GRUB, KERNEL_CMDLINE):
        if os.path.exists(os.path.join(root, rel)):
            return os.path.join(root, rel)
    raise CmdlineError("path: no boot loader configuration here (neither /etc/default/grub nor /etc/kernel/cmdline); "
                       "set path to the file your boot loader reads")


def running_has(args, state, root="/"):
    """Whether the running kernel already booted with (present) or without (absent) these arguments."""
    running = cmdline_args(read_cmdline(root))
    words = read_cmdline(root).split()
    if state == "present":
        return all(a in words or ("=" not in a and a in running) for a in args)
    return not any(a in words or ("=" not in a and a in running) for a in args)
