//! fio text in a scenario: a command line (`fio --name=...`, split as a shell splits
//! words, each argument mapped back to its scenario line) or job-file text, read as fio
//! reads it ([`parse_fio`]); and the shell quoting the other way ([`shell_quote`]).

use crate::scenario::Scenario;
use crate::scenario::resolve::FioSource;
use crate::workload::fio as fiojob;

/// Read one fio run (command line or job-file text) of a scenario as fio would, with
/// errors at the scenario's lines, except that a scenario reads no environment
/// (`${VAR}` is an error) and quotes no file it names; `blkcg-sim fio`
/// ([`Scenario::acting_as_fio`]) does both as fio does. An `include` is read relative
/// to the scenario file, a job file named on a command line from the working folder,
/// as a shell would.
pub fn parse_fio(sc: &Scenario, f: &FioSource) -> Result<fiojob::FioJobs, String> {
    let rd = if sc.acting_as_fio {
        fiojob::Reader::fio()
    } else {
        fiojob::Reader::scenario()
    };
    // a scenario written from arguments ([`Scenario::generated`]) has lines nobody
    // has seen: its fio texts are command lines, their arguments numbered as fio
    // numbers its own (`<cmdline>:N`)
    let (file, lines) = match &sc.places {
        Some(_) => ("<cmdline>", &[][..]),
        None => (sc.file.as_str(), f.lines.as_slice()),
    };
    let text = f.text.as_str();
    if !is_cmdline(text) {
        let at = fiojob::Origin { file, lines };
        return fiojob::parse_jobfile(text, &at, &rd).map_err(|e| e.to_string());
    }
    let t = text.trim_start();
    let args_at = text.len() - t.len() + if t.starts_with("fio") { 3 } else { 0 };
    let (offsets, args): (Vec<usize>, Vec<String>) =
        shell_words_at(&text[args_at..])?.into_iter().unzip();
    // the scenario's line of each argument; a whole text's arguments are numbered
    let lines: Vec<usize> = if lines.is_empty() {
        Vec::new()
    } else {
        offsets
            .iter()
            .map(|i| {
                let l = text[..args_at + i].matches('\n').count();
                lines.get(l).or(lines.last()).copied().unwrap_or_default()
            })
            .collect()
    };
    let at = fiojob::Origin {
        file,
        lines: &lines,
    };
    fiojob::parse_cmdline_with(&args, &at, &rd).map_err(|e| e.to_string())
}

/// Whether a scenario's `fio` text is a command line (else a job file).
pub fn is_cmdline(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("--")
        || t.strip_prefix("fio")
            .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
}

/// Split a command line as a POSIX shell would for plain words and quotes.
pub fn split_shell_words(s: &str) -> Result<Vec<String>, String> {
    Ok(shell_words_at(s)?.into_iter().map(|(_, w)| w).collect())
}

/// [`split_shell_words`], each word with the byte offset where it starts. A variable
/// a shell would expand (`$VAR`, `${VAR}`, outside single quotes) is refused: a
/// scenario reads no environment. Nothing else of the shell is: `$(...)` stays text.
pub(crate) fn shell_words_at(s: &str) -> Result<Vec<(usize, String)>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    // where the word being read starts, if one is
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    // the next character to read starts at byte `i`
    let mut i = 0;
    while let Some(c) = s[i..].chars().next() {
        // this character starts at `at`, the one after it (`after`) at `next`
        let (at, next) = (i, i + c.len_utf8());
        let after = s[next..].chars().next();
        if c == '$'
            && quote != Some('\'')
            && after.is_some_and(|n| n == '{' || n == '_' || n.is_ascii_alphabetic())
        {
            let var = s[next..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || "{}_".contains(c)))
                .next()
                .unwrap_or_default();
            return Err(format!(
                "`${var}` in the fio command line: a shell would expand it, but a scenario \
                 reads no environment (the same scenario gives the same output on any \
                 machine); write the value"
            ));
        }
        i = next;
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = after {
                    cur.push(n);
                    i += n.len_utf8();
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                start.get_or_insert(at);
            }
            (None, '\\') => {
                if let Some(n) = after {
                    if n != '\n' {
                        cur.push(n);
                        start.get_or_insert(at);
                    }
                    i += n.len_utf8();
                }
            }
            (None, c) if c.is_whitespace() => {
                if let Some(at) = start.take() {
                    out.push((at, std::mem::take(&mut cur)));
                }
            }
            (None, _) => {
                // the character and the plain ones after it, in one go
                let run = s[next..]
                    .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '\\' | '$'))
                    .map_or(s.len(), |n| next + n);
                start.get_or_insert(at);
                cur.push_str(&s[at..run]);
                i = run;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote in the fio command line".into());
    }
    if let Some(at) = start {
        out.push((at, cur));
    }
    Ok(out)
}

/// `s` as one shell word: as is when plain, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<(usize, String)> {
        shell_words_at(s).unwrap()
    }

    /// Words as a POSIX shell splits them, each at the byte where it starts: quotes,
    /// backslashes (a line continuation joins), a `$` that starts no variable, UTF-8.
    #[test]
    fn shell_words_split_as_a_shell_does() {
        let w = |v: &[(usize, &str)]| -> Vec<(usize, String)> {
            v.iter().map(|&(i, s)| (i, s.to_string())).collect()
        };
        assert_eq!(words("a  b"), w(&[(0, "a"), (3, "b")]));
        assert_eq!(
            words("--name=x  --bs='4 k'"),
            w(&[(0, "--name=x"), (10, "--bs=4 k")])
        );
        assert_eq!(words(r#""a\"b" c\ d"#), w(&[(0, "a\"b"), (7, "c d")]));
        assert_eq!(words("a$ b$"), w(&[(0, "a$"), (3, "b$")]));
        assert_eq!(words("a\\\nb 'x$y'"), w(&[(0, "ab"), (5, "x$y")]));
        assert_eq!(words("ü-ö x \"é\""), w(&[(0, "ü-ö"), (6, "x"), (8, "é")]));
        assert_eq!(words("  "), w(&[]));
        assert!(shell_words_at("--bs=$BS").is_err());
        assert!(shell_words_at("--bs=\"${BS}\"").is_err());
        assert!(shell_words_at("--bs='4k").is_err());
    }
}
