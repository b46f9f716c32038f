# shellcheck shell=sh disable=SC2154 # launch.sh and preflight.sh set bin, root, log
# launchcheck.sh, inline in launch.sh and preflight.sh (remote.HostScript):
# the part of a launch that can be tried without starting anything. It
# resolves the worker binary as a launch does (bin, else synthwatch on
# PATH, else ~/.local/bin/synthwatch) and checks it can run, and that root
# is a pipeline root (a typo'd root is refused before logs/ is made in it),
# then opens the worker log (log) on fd 3 for appending.
if [ -z "$bin" ]; then
  bin=$(command -v synthwatch 2>/dev/null) || bin="$HOME/.local/bin/synthwatch"
fi
[ -x "$bin" ] || { echo "synthwatch binary not found on the host ($bin): deploy it first" >&2; exit 127; }
[ -f "$bin" ] || { echo "the synthwatch binary on the host ($bin) is not a file" >&2; exit 126; }
[ -d "$root/prepared" ] || { echo "no pipeline root at $root (no prepared/ directory): nothing launched, nothing created" >&2; exit 1; }
mkdir -p -- "$root/logs" || exit 1
cd -- "$root" || exit 1
# The log is opened never through a symlink and never a file another
# account owns: logs/ sits in a root others may write, and the worker's
# lines (a category's name keeps ';') appended to a link to someone's
# ~/.bashrc would run at their next login. A shell's ">>" follows links,
# so the log is made fresh with noclobber (O_EXCL, which no link passes)
# when missing, and after the open the descriptor's file must be the very
# inode at the path (lstat: a link is its own inode), a regular file of
# ours with one name. Without stat the checks above stand.
badlog() { echo "refusing the worker log $log: $1; nothing launched (another account may have planted it: remove it, or keep others from writing $root/logs)" >&2; exit 1; }
[ ! -L "$log" ] || badlog "it is a symbolic link"
[ ! -e "$log" ] || [ -f "$log" ] || badlog "it is not a regular file"
if [ ! -e "$log" ]; then
  (set -C; : > "$log") 2>/dev/null || { [ -f "$log" ] && [ ! -L "$log" ]; } || badlog "it cannot be created"
fi
# shellcheck disable=SC2012 # ls's owner column, for the message alone
[ -O "$log" ] || badlog "it is owned by another account ($(ls -ld -- "$log" 2>/dev/null | awk '{print $3}'))"
[ -w "$log" ] || badlog "you cannot write it"
command exec 3>> "$log" || badlog "it cannot be written"
me=$(id -u)
if fd=$(stat -L -c '%d:%i:%u:%h:%f' "/proc/$$/fd/3" 2>/dev/null) && at=$(stat -c '%d:%i' -- "$log" 2>/dev/null); then
  case $fd in "$at":"$me":1:8???) ;; *) badlog "the file opened is not one of ours with one name at that path (a link, a hard link, or swapped while opened)" ;; esac
fi
