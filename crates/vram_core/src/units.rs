//! Byte units. The UI uses GiB (2^30 bytes) and says so; GB (10^9) is offered as a toggle, because
//! vendors sell "80 GB" cards that `nvidia-smi` shows as 79.19 GiB usable.

/// 2^30 bytes.
pub const GIB: u64 = 1 << 30;
/// 2^20 bytes.
pub const MIB: u64 = 1 << 20;
/// 10^9 bytes.
pub const GB: u64 = 1_000_000_000;

/// `bytes` in GiB as a float (for display only; all arithmetic stays in `u64` bytes).
pub fn to_gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

/// Formats bytes as GiB with two decimals, e.g. `"14.96 GiB"`; small values in MiB.
pub fn format_gib(bytes: u64) -> String {
    if bytes < GIB / 10 {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.2} GiB", to_gib(bytes))
    }
}

/// Formats bytes as decimal GB with two decimals.
pub fn format_gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / GB as f64)
}

/// A parameter count in human form: `8.03 B`, `124.4 M`, `60.5 K`.
pub fn format_count(n: u64) -> String {
    let f = n as f64;
    if n >= 1_000_000_000 {
        format!("{:.2} B", f / 1e9)
    } else if n >= 1_000_000 {
        format!("{:.1} M", f / 1e6)
    } else if n >= 1_000 {
        format!("{:.1} K", f / 1e3)
    } else {
        n.to_string()
    }
}

/// Groups digits by thousands: `8030261248` → `8,030,261,248`.
pub fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gib_is_binary() {
        assert_eq!(format_gib(GIB), "1.00 GiB");
        assert_eq!(format_gb(GIB), "1.07 GB");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(8030261248), "8,030,261,248");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(format_count(8_030_261_248), "8.03 B");
    }
}
