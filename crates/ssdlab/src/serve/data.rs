//! The bytes a served drive holds: in memory (sparse, gone when the server stops) or in a file
//! (`--data file:PATH`, so that data outlives the server). The device model times each
//! request; this store keeps what was written, changed when the model completes a request.

use crate::device::store::Store;
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Where the data lives, as `--data` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataSpec {
    /// `memory`: sparse, in 512-byte blocks.
    Memory,
    /// `file:PATH`: a file of exactly the export's size (created sparse if missing or empty).
    File(PathBuf),
}

impl DataSpec {
    pub fn parse(text: &str) -> Result<DataSpec> {
        if text == "memory" {
            return Ok(DataSpec::Memory);
        }
        if let Some(path) = text.strip_prefix("file:") {
            if !path.is_empty() {
                return Ok(DataSpec::File(PathBuf::from(path)));
            }
        }
        Err(Error::Config(format!(
            "--data {text:?}: expected memory or file:PATH"
        )))
    }
}

pub enum Data {
    Memory(Store),
    File(File),
}

impl Data {
    /// Open the store for an export of `size` bytes.
    pub fn open(spec: &DataSpec, size: u64, read_only: bool) -> Result<Data> {
        let path = match spec {
            DataSpec::Memory => return Ok(Data::Memory(Store::new(512))),
            DataSpec::File(p) => p,
        };
        let err = |what: String| Error::Config(format!("--data file:{}: {what}", path.display()));
        let dangling = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
            && !path.exists();
        if dangling {
            // Opening it would create the link's target, a file the user did not name.
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(err(format!(
                "a symbolic link to {}, which does not exist: expected an existing file or a new path",
                target.display()
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(!read_only)
            .truncate(false)
            .open(path)
            .map_err(|e| err(e.to_string()))?;
        lock(&file)
            .map_err(|e| err(format!("cannot lock it ({e}): is another server using it?")))?;
        let meta = file.metadata().map_err(|e| err(e.to_string()))?;
        if !meta.is_file() {
            // A directory opens read-only; a device would report no length.
            return Err(err("not a regular file: expected a file path".into()));
        }
        let len = meta.len();
        if len == 0 && !read_only {
            file.set_len(size).map_err(|e| err(e.to_string()))?;
        } else if len != size {
            return Err(err(format!(
                "the file holds {len} bytes, the device {size}: expected a file of exactly the device's size, or a new one"
            )));
        }
        Ok(Data::File(file))
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.write_bytes(offset, data);
                Ok(())
            }
            Data::File(f) => f.write_all_at(data, offset),
        }
    }

    /// Zeros over `offset .. offset + len`: a hole in the file where the file system can punch
    /// one, written zeros where it cannot.
    pub fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.zero_bytes(offset, len);
                Ok(())
            }
            Data::File(f) => {
                if punch_hole(f, offset, len).is_ok() {
                    return Ok(());
                }
                let zeros = vec![0u8; len.min(1 << 20) as usize];
                let mut at = offset;
                while at < offset + len {
                    let n = (offset + len - at).min(zeros.len() as u64) as usize;
                    f.write_all_at(&zeros[..n], at)?;
                    at += n as u64;
                }
                Ok(())
            }
        }
    }

    pub fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.read_bytes(offset, out);
                Ok(())
            }
            Data::File(f) => f.read_exact_at(out, offset),
        }
    }

    /// Make what was written durable (a FLUSH the model completed).
    pub fn sync(&self) -> io::Result<()> {
        match self {
            Data::Memory(_) => Ok(()),
            Data::File(f) => f.sync_data(),
        }
    }

    /// `offset .. offset + len` as runs of written data (true) and holes (false). A file
    /// reports its file system's holes (a block partly written counts as data).
    pub fn extents(&self, offset: u64, len: u64) -> Vec<(u64, u64, bool)> {
        match self {
            Data::Memory(s) => s.extents(offset, len),
            Data::File(f) => {
                file_extents(f, offset, len).unwrap_or_else(|_| vec![(offset, len, true)])
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn lock(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor this File owns.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn lock(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(target_os = "linux")]
fn punch_hole(f: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(o), Ok(l)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    // SAFETY: fallocate on a file descriptor this File owns; the range is checked above.
    let r = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            o,
            l,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_: &File, _: u64, _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The file's data and holes over a range, by SEEK_DATA / SEEK_HOLE.
#[cfg(target_os = "linux")]
fn file_extents(f: &File, offset: u64, len: u64) -> io::Result<Vec<(u64, u64, bool)>> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    let end = offset + len;
    let seek = |at: u64, whence| -> io::Result<Option<u64>> {
        let at = i64::try_from(at).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: lseek on a file descriptor this File owns; read_at/write_at take explicit
        // offsets, so moving the file position disturbs nothing.
        let r = unsafe { libc::lseek(fd, at, whence) };
        if r >= 0 {
            return Ok(Some(r as u64));
        }
        let e = io::Error::last_os_error();
        // ENXIO: no data at or after `at`.
        if e.raw_os_error() == Some(libc::ENXIO) {
            Ok(None)
        } else {
            Err(e)
        }
    };
    let mut runs = Vec::new();
    let mut at = offset;
    while at < end {
        let data = seek(at, libc::SEEK_DATA)?.unwrap_or(end).min(end);
        if data > at {
            runs.push((at, data - at, false));
        }
        if data >= end {
            break;
        }
        let hole = seek(data, libc::SEEK_HOLE)?.unwrap_or(end).min(end);
        runs.push((data, hole - data, true));
        at = hole;
    }
    Ok(runs)
}

#[cfg(not(target_os = "linux"))]
fn file_extents(_: &File, offset: u64, len: u64) -> io::Result<Vec<(u64, u64, bool)>> {
    Ok(vec![(offset, len, true)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dangling_symbolic_link_is_refused_and_its_target_not_created() {
        // Issue 45, defect 7: opening it created the link's target, a file the user never named.
        let dir = std::env::temp_dir().join(format!("ssdlab-dangling-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("disk.img");
        let target = dir.join("elsewhere.img");
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let spec = DataSpec::parse(&format!("file:{}", link.display())).unwrap();
        let e = Data::open(&spec, 4 << 20, false).err().unwrap().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("elsewhere.img"),
            "{e}"
        );
        assert!(!target.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_store_keeps_data_across_opens_and_reports_its_holes() {
        let dir = std::env::temp_dir().join(format!("ssdlab-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.img");
        let _ = std::fs::remove_file(&path);
        let spec = DataSpec::parse(&format!("file:{}", path.display())).unwrap();
        let size = 4 << 20;
        {
            let mut d = Data::open(&spec, size, false).unwrap();
            // A second server on the same file is refused.
            assert!(Data::open(&spec, size, false).is_err());
            d.write(1 << 20, &[0xab; 8192]).unwrap();
            d.write(3 << 20, &[0xcd; 4096]).unwrap();
            d.zero((3 << 20) + 4096, 4096).unwrap();
            d.sync().unwrap();
        }
        let d = Data::open(&spec, size, true).unwrap();
        let mut b = vec![0u8; 8192];
        d.read(1 << 20, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0xab));
        d.read(3 << 20, &mut b).unwrap();
        assert!(b[..4096].iter().all(|&x| x == 0xcd) && b[4096..].iter().all(|&x| x == 0));
        let runs = d.extents(0, size);
        assert_eq!(runs.iter().map(|r| r.1).sum::<u64>(), size);
        assert_eq!(runs[0], (0, 1 << 20, false));
        assert!(runs.iter().any(|&(o, _, data)| data && o == 1 << 20));
        // A file of another size is refused, naming both sizes.
        drop(d);
        let e = Data::open(&spec, size * 2, false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(&size.to_string()) && e.contains(&(size * 2).to_string()),
            "{e}"
        );
        assert!(DataSpec::parse("disk:/x").is_err());
        let e = Data::open(&DataSpec::File(dir.clone()), size, true)
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
