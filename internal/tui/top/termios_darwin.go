package top

import "golang.org/x/sys/unix"

// ioctlGetTermios is tcgetattr's ioctl, which only a terminal answers.
const ioctlGetTermios = unix.TIOCGETA
