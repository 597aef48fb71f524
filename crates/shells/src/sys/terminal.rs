//! The terminal emu writes its status to.

/// Rows and columns of the terminal on stderr (24 x 80 if unknown).
pub fn terminal_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills the winsize we pass.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_row > 0 && size.ws_col > 0 {
        (size.ws_row as usize, size.ws_col as usize)
    } else {
        (24, 80)
    }
}
