//! HighSpeed TCP against RFC 3649's response function: b(w) falls
//! log-linearly from 0.5 at w = 38 to 0.1 at w = 83000, and a(w) =
//! w^2 p(w) 2 b(w) / (2 - b(w)) with p(w) = 0.078 / w^1.2.

unsafe extern "C" {
    fn emu_alg_hstcp_rows() -> u32;
    fn emu_alg_hstcp_table(row: u32, cwnd: *mut u32, md: *mut u32);
    fn emu_alg_hstcp_row(cwnd: u32) -> u32;
    fn emu_alg_hstcp_ai(row: u32) -> u32;
    fn emu_alg_hstcp_after_loss(cwnd: u32, row: u32) -> u32;
}

fn table(row: u32) -> (u32, u32) {
    let (mut cwnd, mut md) = (0, 0);
    unsafe { emu_alg_hstcp_table(row, &mut cwnd, &mut md) };
    (cwnd, md)
}

fn b(w: f64) -> f64 {
    (0.1 - 0.5) * (w.ln() - 38f64.ln()) / (83_000f64.ln() - 38f64.ln()) + 0.5
}

fn a(w: f64) -> f64 {
    let p = 0.078 / w.powf(1.2);
    w * w * p * 2.0 * b(w) / (2.0 - b(w))
}

#[test]
fn the_table_is_the_rfcs_response_function() {
    let rows = unsafe { emu_alg_hstcp_rows() };
    assert_eq!(rows, 72);
    let mut last = 0;
    for row in 0..rows {
        let (w, md) = table(row);
        assert!(w > last, "row {row}: windows rise");
        last = w;
        let wf = f64::from(w);
        let increase = f64::from(unsafe { emu_alg_hstcp_ai(row) });
        assert!(
            (a(wf) - increase).abs() < 0.1,
            "row {row}: a({w}) = {} vs {increase}",
            a(wf)
        );
        assert!(
            (f64::from(md) / 256.0 - b(wf)).abs() < 0.005,
            "row {row}: b({w}) = {}",
            b(wf)
        );
    }
}

/// The module's walk: a row at a time from `row`, up while the window is
/// above the row's bound, down while it is within the row below's.
fn walk(cwnd: u32, mut row: u32, rows: u32) -> u32 {
    if cwnd > table(row).0 {
        while cwnd > table(row).0 && row < rows - 1 {
            row += 1;
        }
    } else {
        while row > 0 && cwnd <= table(row - 1).0 {
            row -= 1;
        }
    }
    row
}

#[test]
fn the_row_is_where_the_modules_walk_ends_from_any_row() {
    let rows = unsafe { emu_alg_hstcp_rows() };
    let mut cwnd = 1u32;
    while cwnd < 2_000_000 {
        let row = unsafe { emu_alg_hstcp_row(cwnd) };
        for from in 0..rows {
            assert_eq!(walk(cwnd, from, rows), row, "cwnd {cwnd} from row {from}");
        }
        cwnd = cwnd * 9 / 8 + 1;
    }
    for (cwnd, want) in [
        (38u32, 0u32),
        (39, 1),
        (89_053, 71),
        (89_054, 71),
        (u32::MAX, 71),
    ] {
        assert_eq!(unsafe { emu_alg_hstcp_row(cwnd) }, want, "cwnd {cwnd}");
    }
}

#[test]
fn a_loss_takes_b_of_the_window_off() {
    for cwnd in [30u32, 1000, 10_000, 80_000] {
        let row = unsafe { emu_alg_hstcp_row(cwnd) };
        let left = unsafe { emu_alg_hstcp_after_loss(cwnd, row) };
        let (_, md) = table(row);
        let want = f64::from(cwnd) * (1.0 - f64::from(md) / 256.0);
        assert!(
            (f64::from(left) - want).abs() < 1.0,
            "cwnd {cwnd}: {left} vs {want}"
        );
        // Against the RFC's b(w) at the row's own bound.
        let rfc = f64::from(cwnd) * (1.0 - b(f64::from(table(row).0)));
        assert!(
            (f64::from(left) - rfc).abs() <= 0.005 * f64::from(cwnd) + 1.0,
            "cwnd {cwnd}"
        );
    }
    assert_eq!(unsafe { emu_alg_hstcp_after_loss(2, 0) }, 2);
}
