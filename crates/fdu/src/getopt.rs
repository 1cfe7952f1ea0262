//! The command line read as glibc's `getopt_long` reads du's: long options
//! abbreviated to any unambiguous prefix (`--sum`, `--max=0`), short
//! options clustered (`-sb`, `-d0`, `-sd 0`), options after operands, `--`
//! ending them (at the first operand with `POSIXLY_CORRECT`), and
//! getopt's own words for what it refuses. The result is the same command
//! line spelled out in full (`--max-depth=0`, then `--` and the operands)
//! for clap to parse, so that clap never meets an abbreviation or a value
//! that looks like an option.
//!
//! du's options abbreviate exactly as in du: a prefix that fits one of
//! du's is that option even when it also fits one of fdu's own (`--th` is
//! `--threshold`, not `--threads`), and an ambiguous one lists du's
//! candidates in du's order, as du does. fdu's own options abbreviate
//! among themselves.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// What an option takes after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    /// A value: `--name=V`, `--name V`, `-xV`, `-x V`.
    Value,
    /// A value only as `--name=V`.
    Optional,
}

/// One option of the table.
#[derive(Clone, Debug)]
pub struct Opt {
    /// The id the full spelling is made from (clap's id).
    pub id: String,
    pub long: Option<String>,
    pub shorts: Vec<u8>,
    pub takes: Takes,
}

/// The command line spelled out, and which options were last given by
/// their long name (du's messages name an option as it was given: `-B`
/// or `--block-size`).
#[derive(Debug)]
pub struct Normalized {
    pub args: Vec<OsString>,
    pub long_spelled: Vec<String>,
    /// Every option given, in order, with its value (du reads them in
    /// order, and the first bad value is the one it names).
    pub given: Vec<Given>,
}

/// One option as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub id: String,
    /// Spelled by its long name (abbreviated or not).
    pub long: bool,
    pub value: Option<Vec<u8>>,
}

/// `args` (with the program first) against `du_options` (du's table, in
/// du's order: the order of its "possibilities") and `own` (fdu's other
/// options). Err: getopt's message for what it refuses.
pub fn normalize(args: &[OsString], du_options: &[Opt], own: &[Opt]) -> Result<Normalized, String> {
    let posixly_correct = std::env::var_os("POSIXLY_CORRECT").is_some();
    let mut out: Vec<OsString> = args.iter().take(1).cloned().collect();
    let mut operands: Vec<OsString> = Vec::new();
    let mut long_spelled: Vec<String> = Vec::new();
    let mut given: Vec<Given> = Vec::new();
    let mut spelled_as = |id: &str, long: bool, value: Option<&[u8]>| {
        long_spelled.retain(|s| s != id);
        if long {
            long_spelled.push(id.to_string());
        }
        given.push(Given {
            id: id.to_string(),
            long,
            value: value.map(<[u8]>::to_vec),
        });
    };
    let all = || du_options.iter().chain(own);
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].as_bytes();
        i += 1;
        if arg == b"--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = arg.strip_prefix(b"--") {
            let (name, value) = match body.iter().position(|&b| b == b'=') {
                Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
                None => (body, None),
            };
            let opt = find_long(name, body, du_options, own)?;
            let long = opt.long.as_deref().unwrap_or_default();
            let value = match (opt.takes, value) {
                (Takes::Nothing, Some(_)) => return Err(format!("option '--{long}' doesn't allow an argument")),
                (Takes::Value, None) => match args.get(i) {
                    Some(next) => {
                        i += 1;
                        Some(next.as_bytes())
                    }
                    None => return Err(format!("option '--{long}' requires an argument")),
                },
                (_, value) => value,
            };
            out.push(spelled_out(opt, value));
            spelled_as(&opt.id, true, value);
            continue;
        }
        if arg.len() < 2 || arg[0] != b'-' {
            if posixly_correct {
                operands.extend(args[i - 1..].iter().cloned());
                break;
            }
            operands.push(args[i - 1].clone());
            continue;
        }
        let mut j = 1;
        while j < arg.len() {
            let c = arg[j];
            j += 1;
            let Some(opt) = all().find(|o| o.shorts.contains(&c)) else {
                return Err(format!("invalid option -- '{}'", char_of(c)));
            };
            if opt.takes == Takes::Value {
                let value = if j < arg.len() {
                    &arg[j..]
                } else {
                    match args.get(i) {
                        Some(next) => {
                            i += 1;
                            next.as_bytes()
                        }
                        None => return Err(format!("option requires an argument -- '{}'", char_of(c))),
                    }
                };
                out.push(spelled_out(opt, Some(value)));
                spelled_as(&opt.id, false, Some(value));
                break;
            }
            out.push(match &opt.long {
                Some(_) => spelled_out(opt, None),
                None => OsString::from_vec(vec![b'-', c]),
            });
            spelled_as(&opt.id, false, None);
        }
    }
    if !operands.is_empty() {
        out.push("--".into());
        out.extend(operands);
    }
    Ok(Normalized {
        args: out,
        long_spelled,
        given,
    })
}

/// The option a long name (or a prefix of one) means; `typed` is what
/// followed the `--`, as getopt repeats it.
fn find_long<'a>(name: &[u8], typed: &[u8], du_options: &'a [Opt], own: &'a [Opt]) -> Result<&'a Opt, String> {
    let typed = String::from_utf8_lossy(typed);
    let long_is = |o: &&Opt, exact: bool| {
        o.long.as_deref().is_some_and(|l| {
            if exact {
                l.as_bytes() == name
            } else {
                l.as_bytes().starts_with(name)
            }
        })
    };
    if let Some(opt) = du_options.iter().chain(own).find(|o| long_is(o, true)) {
        return Ok(opt);
    }
    for table in [du_options, own] {
        let candidates: Vec<&Opt> = table.iter().filter(|o| long_is(o, false)).collect();
        match candidates.as_slice() {
            [] => continue,
            [one] => return Ok(one),
            many => {
                let mut message = format!("option '--{typed}' is ambiguous; possibilities:");
                for o in many {
                    message.push_str(&format!(" '--{}'", o.long.as_deref().unwrap_or_default()));
                }
                return Err(message);
            }
        }
    }
    Err(format!("unrecognized option '--{typed}'"))
}

/// `--long`, `--long=VALUE`, or `-c` for an option with no long name.
fn spelled_out(opt: &Opt, value: Option<&[u8]>) -> OsString {
    let mut s = match &opt.long {
        Some(long) => format!("--{long}").into_bytes(),
        None => vec![b'-', opt.shorts[0]],
    };
    if let Some(value) = value {
        if opt.long.is_some() {
            s.push(b'=');
        }
        s.extend_from_slice(value);
    }
    OsString::from_vec(s)
}

/// A byte of a short option as getopt prints it (a byte that is not
/// ASCII is shown as the character of that code).
fn char_of(c: u8) -> char {
    c as char
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(id: &str, long: Option<&str>, shorts: &str, takes: Takes) -> Opt {
        Opt {
            id: id.into(),
            long: long.map(Into::into),
            shorts: shorts.bytes().collect(),
            takes,
        }
    }

    fn tables() -> (Vec<Opt>, Vec<Opt>) {
        let du = vec![
            opt("all", Some("all"), "a", Takes::Nothing),
            opt("separate-dirs", Some("separate-dirs"), "S", Takes::Nothing),
            opt("summarize", Some("summarize"), "s", Takes::Nothing),
            opt("max-depth", Some("max-depth"), "d", Takes::Value),
            opt("threshold", Some("threshold"), "t", Takes::Value),
            opt("time", Some("time"), "", Takes::Optional),
            opt("time-style", Some("time-style"), "", Takes::Value),
            opt("k", None, "k", Takes::Nothing),
        ];
        let own = vec![
            opt("threads", Some("threads"), "j", Takes::Value),
            opt("tree", Some("tree"), "", Takes::Nothing),
            opt("tree-depth", Some("tree-depth"), "", Takes::Value),
        ];
        (du, own)
    }

    fn norm(args: &[&str]) -> Result<Vec<String>, String> {
        let (du, own) = tables();
        let args: Vec<OsString> = std::iter::once("fdu")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        normalize(&args, &du, &own).map(|n| n.args[1..].iter().map(|a| a.to_string_lossy().into_owned()).collect())
    }

    #[test]
    fn abbreviations_prefer_dus_options() {
        assert_eq!(norm(&["--sum", "x"]).unwrap(), ["--summarize", "--", "x"]);
        assert_eq!(norm(&["--max=0"]).unwrap(), ["--max-depth=0"]);
        assert_eq!(norm(&["--th", "5"]).unwrap(), ["--threshold=5"]);
        assert_eq!(norm(&["--thr", "-5"]).unwrap(), ["--threshold=-5"]);
        assert_eq!(norm(&["--threa=2"]).unwrap(), ["--threads=2"]);
        assert_eq!(norm(&["--time"]).unwrap(), ["--time"]);
        assert_eq!(norm(&["--tree"]).unwrap(), ["--tree"]);
        assert_eq!(
            norm(&["--s"]).unwrap_err(),
            "option '--s' is ambiguous; possibilities: '--separate-dirs' '--summarize'"
        );
        assert_eq!(
            norm(&["--tre"]).unwrap_err(),
            "option '--tre' is ambiguous; possibilities: '--tree' '--tree-depth'"
        );
        assert_eq!(norm(&["--no=1"]).unwrap_err(), "unrecognized option '--no=1'");
        assert_eq!(
            norm(&["--al=1"]).unwrap_err(),
            "option '--all' doesn't allow an argument"
        );
        assert_eq!(
            norm(&["--max"]).unwrap_err(),
            "option '--max-depth' requires an argument"
        );
    }

    #[test]
    fn short_options_cluster_and_take_values() {
        assert_eq!(
            norm(&["-sad0", "x", "-t", "-1", "-k"]).unwrap(),
            [
                "--summarize",
                "--all",
                "--max-depth=0",
                "--threshold=-1",
                "-k",
                "--",
                "x"
            ]
        );
        assert_eq!(norm(&["-sd"]).unwrap_err(), "option requires an argument -- 'd'");
        assert_eq!(norm(&["-sy"]).unwrap_err(), "invalid option -- 'y'");
        assert_eq!(norm(&["--", "-s", "-"]).unwrap(), ["--", "-s", "-"]);
        assert_eq!(norm(&["-", "-a"]).unwrap(), ["--all", "--", "-"]);
    }

    #[test]
    fn spelling_is_remembered_per_option() {
        let (du, own) = tables();
        let args: Vec<OsString> = ["fdu", "--thr=1", "-d", "1", "-t2"].iter().map(Into::into).collect();
        let n = normalize(&args, &du, &own).unwrap();
        assert!(n.long_spelled.is_empty(), "the last -t was short");
        let args: Vec<OsString> = ["fdu", "-t2", "--thr=1"].iter().map(Into::into).collect();
        assert_eq!(normalize(&args, &du, &own).unwrap().long_spelled, ["threshold"]);
    }
}
