//! IoT Core's broker locally: Eclipse Mosquitto (Debian's `mosquitto`, installed by
//! `localstack/lib.sh`), one per stack, as IoT Core admits a vase:
//!
//! - TLS only, and only with a client certificate issued by the emulator's local CA
//!   (`localstack/emulator.py`: every certificate IoT's API creates is signed by it, its CN
//!   is the certificate id, which becomes the client's user name and client id);
//! - a certificate that is not both ACTIVE and attached to a thing is in the CRL the emulator
//!   rewrites after every IoT write (Mosquitto reloads it on the SIGHUP the emulator sends),
//!   so it is refused at connect;
//! - what a certificate may publish and receive is the ACL the emulator derives from the
//!   policies attached to it, `${iot:Connection.Thing.ThingName}` replaced by its thing: a
//!   vase publishes only under its own topics.
//!
//! Where it differs from IoT Core (docs/local-cloud.md): a client id that is not the thing's
//! is not refused at connect (Mosquitto names the session after the certificate instead, so
//! it cannot act as another thing); a forbidden publish is dropped (MQTT 5: PUBACK 0x87), not
//! disconnected; a revoked certificate's open connection stays open but can do nothing.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::DevError;

/// The directory the emulator keeps the CA, the broker's and the bridge's certificates, the
/// CRL and the ACL in (`BOUQUET_IOT_DIR`).
#[derive(Clone, Debug)]
pub struct IotFiles {
    dir: PathBuf,
}

impl IotFiles {
    /// From `BOUQUET_IOT_DIR`, which `localstack/lib.sh` sets for the emulator and the dev
    /// stack alike.
    pub fn from_env() -> Result<Self, DevError> {
        let dir = std::env::var_os("BOUQUET_IOT_DIR").map(PathBuf::from).ok_or_else(|| {
            DevError::Unsupported(
                "BOUQUET_IOT_DIR is not set: start the emulator and the dev stack through localstack/run.sh or test.sh, which share it".into(),
            )
        })?;
        let files = Self { dir };
        if !files.path("ca.pem").is_file() {
            return Err(DevError::Unsupported(format!(
                "{} has no ca.pem: the AWS endpoint is not the project's emulator started with BOUQUET_IOT_DIR (localstack/lib.sh)",
                files.dir.display()
            )));
        }
        Ok(files)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn read(&self, name: &str) -> Result<Vec<u8>, DevError> {
        std::fs::read(self.path(name)).map_err(DevError::Io)
    }
}

/// A running broker; stopped when dropped.
pub struct Mosquitto {
    pub address: SocketAddr,
    _process: tokio::process::Child,
    pid_file: PathBuf,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// A free port on loopback (Mosquitto reads port 0 as "no TCP port").
fn free_port() -> Result<u16, DevError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Mosquitto {
    /// Starts Mosquitto for `stack` on `address` (port 0: a free one) with the emulator's
    /// files, and waits until it accepts connections. Its log is `mosquitto-<stack>.log` in
    /// the IoT directory.
    pub async fn start(
        files: &IotFiles,
        stack: &str,
        address: SocketAddr,
    ) -> Result<Self, DevError> {
        let port = match address.port() {
            0 => free_port()?,
            port => port,
        };
        let address = SocketAddr::new(address.ip(), port);
        // A broker left on the port (another stack's) would answer the readiness check below
        // with certificates of another CA: refuse clearly instead.
        std::net::TcpListener::bind(address).map_err(|error| {
            DevError::Unsupported(format!(
                "the MQTT port {address} is taken ({error}): another dev stack's broker? choose --mqtt-port"
            ))
        })?;
        std::fs::create_dir_all(files.path("brokers"))?;
        std::fs::create_dir_all(files.path("brokers-starting"))?;
        // The emulator sends SIGHUP (reload the CRL) to every broker in `brokers/`; one that
        // has not yet installed its handler dies of it (seen in CI). So the broker writes its pid
        // aside, and it joins `brokers/` once it listens.
        let pid_file = files.path(&format!("brokers/{stack}.pid"));
        let starting_pid_file = files.path(&format!("brokers-starting/{stack}.pid"));
        let log = files.path(&format!("mosquitto-{stack}.log"));
        let config_path = files.path(&format!("mosquitto-{stack}.conf"));
        let path = |name: &str| files.path(name).display().to_string();
        // As root Mosquitto would drop to the user `mosquitto`, who cannot read the files.
        let user = if running_as_root() { "user root\n" } else { "" };
        let config = format!(
            "{user}pid_file {pid}\npersistence false\nlog_dest file {log}\n\
             allow_anonymous false\nacl_file {acl}\n\
             listener {port} {ip}\ncafile {ca}\ncertfile {cert}\nkeyfile {key}\ncrlfile {crl}\n\
             require_certificate true\nuse_identity_as_username true\nuse_username_as_clientid true\n",
            pid = starting_pid_file.display(),
            log = log.display(),
            acl = path("acl"),
            ip = address.ip(),
            ca = path("ca.pem"),
            cert = path("server.pem"),
            key = path("server.key"),
            crl = path("crl.pem"),
        );
        std::fs::write(&config_path, config)?;
        let mut command = tokio::process::Command::new("mosquitto");
        command
            .arg("-c")
            .arg(&config_path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        // The broker ends with the dev stack however the dev stack ends (a SIGKILL runs no
        // destructor): the kernel sends it SIGTERM when its parent dies.
        // SAFETY: prctl is async-signal-safe, as a pre_exec closure must be.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut process = command
            .spawn()
            .map_err(|error| {
                DevError::Unsupported(format!(
                    "cannot start mosquitto ({error}): install Eclipse Mosquitto 2 (Debian: apt-get install mosquitto; localstack/lib.sh does)"
                ))
            })?;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(address).await.is_ok() {
                std::fs::rename(&starting_pid_file, &pid_file)?;
                // A certificate the emulator changed meanwhile: reload once now that the
                // broker's handler is in place.
                if let Some(pid) = process.id() {
                    // SAFETY: kill sends a signal to our own child; no memory is touched.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) };
                }
                return Ok(Self {
                    address,
                    _process: process,
                    pid_file,
                });
            }
            if let Some(status) = process.try_wait()? {
                return Err(DevError::Unexpected(format!(
                    "mosquitto exited ({status}) at start; its log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(DevError::Unexpected(format!(
            "mosquitto did not listen on {address} within 10 s (log: {})",
            log.display()
        )))
    }
}

/// A TLS client configuration for a client of the local broker: the local CA as the only
/// root, and the client's certificate and key (PEM; `None` only to show that the broker
/// refuses a client without one).
pub fn tls(ca: Vec<u8>, client: Option<(Vec<u8>, Vec<u8>)>) -> rumqttc::Transport {
    // rumqttc's TLS uses the process's rustls provider: the SDK's aws-lc-rs.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    rumqttc::Transport::Tls(rumqttc::TlsConfiguration::Simple {
        ca,
        alpn: None,
        client_auth: client,
    })
}
