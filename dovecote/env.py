"""Read configuration from the environment, failing loudly on a bad value."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet


class ConfigError(Exception):
    """An environment variable holds a value Dovecote cannot use."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name}={value} must be at most {maximum}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_allow_hosts(name: str) -> list[str]:
    """Return a comma-separated list of hosts, addresses or CIDRs, each with an optional `:port` (`[v6]:port`)."""
    entries = env_list(name)
    for entry in entries:
        port = entry.rpartition("]:")[2] if entry.startswith("[") else (
            entry.partition(":")[2] if entry.count(":") == 1 else "")
        if ((entry.startswith("[") and "]:" in entry) or entry.count(":") == 1) and not (
                port.isdigit() and 0 < int(port) < 65536):
            raise ConfigError(f"{name}: {entry!r} has a port that is not a number from 1 to 65535")
    return entries


def env_networks(name: str, default: str = "") -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Return a comma-separated list of IP addresses or CIDRs as networks."""
    networks = []
    for item in env_list(name, default):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(f"{name}: {item!r} is not an IP address or CIDR") from None
    return networks


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    """Return a URL whose scheme is one of `schemes` (a failover list: the first entry's)."""
    raw = os.environ.get(name) or default
    scheme = urlsplit(raw.split(",")[0]).scheme
    if scheme not in schemes:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ConfigError(f"{name}={raw!r} must start with one of: {allowed}")
    return raw


PRODUCTION_HINT = ("(production: DJANGO_DEBUG off and DOVECOTE_HTTPS on, outside a checkout: no var/services.env; "
                   "`make services` writes it, or DOVECOTE_HTTPS=false for a plain-HTTP local run)")
MIN_SECRET_KEY_CHARS = 32


def checked_secret_key(name: str, *, production: bool) -> str:
    """Return the Django secret key from `name`: required in production, and never a short or published one."""
    raw = os.environ.get(name, "").strip()
    if not production:
        return raw
    if not raw:
        raise ConfigError(f"{name} must be set in production {PRODUCTION_HINT}; make one with: "
                          f"python -c 'import secrets; print(secrets.token_urlsafe(50))'")
    if len(raw) < MIN_SECRET_KEY_CHARS or raw.lower().startswith(("insecure", "django-insecure", "changeme")):
        raise ConfigError(f"{name} is a placeholder or shorter than {MIN_SECRET_KEY_CHARS} characters: "
                          f"set a random one (python -c 'import secrets; print(secrets.token_urlsafe(50))')")
    return raw


def env_fernet_keys(name: str, *, production: bool) -> list[str]:
    """Return the comma-separated Fernet keys in `name` (the first encrypts); required in production."""
    keys = env_list(name)
    if not keys and production:
        raise ConfigError(f"{name} must be set in production {PRODUCTION_HINT}: it encrypts the subscriptions' "
                          f"signing secrets. Make one with: python manage.py generate_secrets_key")
    for index, key in enumerate(keys, 1):
        try:
            Fernet(key)
        except ValueError:
            raise ConfigError(f"{name}: key {index} is not a Fernet key (32 url-safe base64-encoded bytes); "
                              f"make one with: python manage.py generate_secrets_key") from None
    return keys


def local_fernet_key(path: Path) -> str:
    """Return the Fernet key stored at `path`, creating it (readable by this user only) on first use."""
    return local_secret_key(path, make=lambda: Fernet.generate_key().decode())


def local_secret_key(path: Path, make: Callable[[], str] = lambda: secrets.token_urlsafe(50)) -> str:
    """Return the key stored at `path`, creating it (readable by this user only) on first use."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = make()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as file:
        file.write(key)
    return key


RATE_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
                "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """Read a rate like `6000/min` or `10/15min` as (requests, seconds); raise ValueError when it is not one."""
    count, _, period = rate.strip().partition("/")
    units = period.lstrip("0123456789")
    multiple = period[: len(period) - len(units)]
    if not (count.isascii() and count.isdigit()) or len(count) > 9 or int(count) < 1 or units not in RATE_PERIODS \
            or (multiple and (len(multiple) > 6 or int(multiple) < 1)):
        periods = ", ".join(RATE_PERIODS)
        raise ValueError(f"{rate!r} is not a rate: use a whole number of requests ≥ 1, '/', and one of {periods}, "
                         f"optionally after a number of them (10/15min)")
    return int(count), RATE_PERIODS[units] * int(multiple or 1)


def env_rate(name: str, default: str) -> str:
    """Return a request rate (`N/period`), checked."""
    raw = os.environ.get(name) or default
    try:
        parse_rate(raw)
    except ValueError as error:
        raise ConfigError(f"{name}={error}") from None
    return raw.strip()


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def env_duration(name: str, default: str, *, minimum_s: int, maximum_s: int) -> int:
    """Return a duration such as `7d`, `36h`, `90m` or `3600s`, in seconds, within the bounds."""
    raw = (os.environ.get(name) or default).strip().lower()
    number, unit = raw[:-1], raw[-1:]
    if unit not in DURATION_UNITS or not number.isdigit():
        raise ConfigError(f"{name}={raw!r} is not a duration: a whole number and one of s, m, h, d (7d, 36h)")
    seconds = int(number) * DURATION_UNITS[unit]
    if not minimum_s <= seconds <= maximum_s:
        raise ConfigError(f"{name}={raw!r} must be between {minimum_s} s and {maximum_s} s")
    return seconds
