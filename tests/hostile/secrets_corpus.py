"""Planted secrets for `report --redact`: one generator per kind, each making fresh random values in
the places a capture puts text (a command line, an exception message, a Python source line, a
holder's name, a cell's source, a URL, a config dump), so the redaction is measured on values it
has never seen.

The kinds follow the families of the gitleaks and detect-secrets rule catalogues (vendor-prefixed
tokens, keyword-named values, private keys, URL credentials, connection strings), plus what this
project treats as private: internal host names, Windows and network paths, a home folder with
spaces in its name. Data only: no rule of those tools is copied.

``planted(seed)`` gives (kind, text, the parts that must not survive).
"""

from __future__ import annotations

import random
import string
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _token(rng):  # a random value with letters and digits, 12-24 long
    return _r(rng, ALNUM, rng.randint(12, 24)) + rng.choice("0123456789")


# kind -> rng -> the secret value (what must not appear in the redacted text)
TOKENS = {
    "huggingface (short)": lambda r: "hf_" + _r(r, ALNUM, r.randint(10, 20)),
    "huggingface": lambda r: "hf_" + _r(r, ALNUM, 34),
    "openai project key": lambda r: "sk-proj-" + _r(r, ALNUM + "_-", 48),
    "anthropic key": lambda r: "sk-ant-api03-" + _r(r, ALNUM + "_-", 60),
    "stripe live secret": lambda r: "sk_live_" + _r(r, ALNUM, 24),
    "stripe restricted": lambda r: "rk_live_" + _r(r, ALNUM, 24),
    "aws access key id": lambda r: r.choice(["AKIA", "ASIA"]) + _r(r, UPPER, 16),
    "github classic pat": lambda r: "ghp_" + _r(r, ALNUM, 36),
    "github oauth": lambda r: "gho_" + _r(r, ALNUM, 36),
    "github fine-grained pat": lambda r: "github_pat_" + _r(r, ALNUM, 22) + "_" + _r(r, ALNUM, 59),
    "gitlab pat": lambda r: "glpat-" + _r(r, ALNUM + "_-", 20),
    "npm token": lambda r: "npm_" + _r(r, ALNUM, 36),
    "pypi token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, ALNUM + "_-", 50),
    "slack bot token": lambda r: "xoxb-" + _r(r, "0123456789", 11) + "-" + _r(r, "0123456789", 12) + "-" + _r(r, ALNUM, 24),
    "slack webhook": lambda r: "https://hooks.slack.com/services/T" + _r(r, UPPER, 8) + "/B" + _r(r, UPPER, 8) + "/" + _r(r, ALNUM, 24),
    "google api key": lambda r: "AIza" + _r(r, ALNUM + "_-", 35),
    "google oauth access token": lambda r: "ya29." + _r(r, ALNUM + "_-", 60),
    "sendgrid key": lambda r: "SG." + _r(r, ALNUM + "_-", 22) + "." + _r(r, ALNUM + "_-", 43),
    "digitalocean token": lambda r: "dop_v1_" + _r(r, HEX, 64),
    "shopify token": lambda r: "shpat_" + _r(r, HEX, 32),
    "databricks token": lambda r: "dapi" + _r(r, HEX, 32),
    "age secret key": lambda r: "AGE-SECRET-KEY-1" + _r(r, BECH32, 58),
    "mailgun key": lambda r: "key-" + _r(r, HEX, 32),
    "twilio api key": lambda r: "SK" + _r(r, HEX, 32),
    "telegram bot token": lambda r: _r(r, "123456789", 9) + ":AA" + _r(r, ALNUM + "_-", 33),
    "jwt": lambda r: "eyJ" + _r(r, ALNUM, 20) + ".eyJ" + _r(r, ALNUM, 30) + "." + _r(r, ALNUM + "_-", 43),
}

# Where a token is put: a command line, a message, a source line, a holder's name, a URL parameter.
PLACES = [
    lambda t: f"python train.py --model gpt2 --batch-size 8 {t}",
    lambda t: f"RuntimeError: request failed with credentials {t} (status 401)",
    lambda t: f"    client = Client({t!r})",
    lambda t: f"__main__.cache_{t}",
    lambda t: f"see run_{t}_final for details",
    lambda t: f"fetch https://api.example.com/v1/models?page=2 with {t}",
]


def _keyword_pairs(r: random.Random):
    value = _token(r)
    name = r.choice(["password", "passwd", "api_key", "apiKey", "secret", "client_secret", "auth_token", "db_password",
                     "aws_secret_access_key", "private_key", "access_token", "SECRET_KEY", "Password"])
    form = r.choice([f"{name}={value}", f'{name} = "{value}"', f"{name}: {value}", f'"{name}": "{value}"',
                     f"{name}='{value}'", f"--{name.replace('_', '-')}={value}", f"export {name.upper()}={value}"])
    return form, [value]


def _aws_secret(r):
    value = _r(r, B64, 40)
    return f"aws_secret_access_key = {value}", [value]


def _private_key(r):
    body = [_r(r, B64, 64) for _ in range(4)]
    kind = r.choice(["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED "])
    return (f"key file:\n-----BEGIN {kind}PRIVATE KEY-----\nMII{body[0][3:]}\n" + "\n".join(body[1:])
            + f"\n-----END {kind}PRIVATE KEY-----\n", body)


def _key_body(r):
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _r(r, B64, 60)
    return f"ValueError: could not parse {body}", [body[10:40]]


def _url_credentials(r):
    user, password, host = _r(r, string.ascii_lowercase, 6), _token(r), f"db-{r.randint(1, 99)}.{_r(r, string.ascii_lowercase, 5)}.example"
    scheme = r.choice(["https", "postgres", "redis", "mongodb+srv", "amqp"])
    return f"connecting to {scheme}://{user}:{password}@{host}:5432/app", [password, host, user]


def _azure_connection(r):
    key = _r(r, B64, 86) + "=="
    return f"DefaultEndpointsProtocol=https;AccountName=store{r.randint(1, 99)};AccountKey={key};EndpointSuffix=core.windows.net", [key[:40]]


def _bearer(r):
    value = _r(r, ALNUM + "._-", 40)
    return f"Authorization: Bearer {value}", [value]


def _internal_host(r):
    host = r.choice([f"gpu-node-{r.randint(1, 64)}.cluster.local", f"trainer{r.randint(1, 9)}.corp.example",
                     f"nfs-{r.randint(1, 9)}.storage.internal", f"ml-{r.randint(10, 99)}.lan"])
    return f"NCCL WARN connect to {host} failed", [host]


def _host_in_message(r):
    host = f"{_r(r, string.ascii_lowercase, 7)}.corp.example"
    return f"ConnectionError(host='{host}', port=443): Max retries exceeded", [host]


def _windows_path(r):
    user = _r(r, string.ascii_lowercase, 6)
    return f"File \"C:\\Users\\{user}\\secret-project\\train.py\", line 4", [user, "secret-project"]


def _unc_path(r):
    server = f"fs{r.randint(1, 9)}"
    user = _r(r, string.ascii_lowercase, 6)
    return f"loaded \\\\{server}\\research\\{user}\\data.pt", [server, user]


def _spaced_home(r):
    user = _r(r, string.ascii_lowercase, 6)
    folder = r.choice(["Données privées", "My Documents", "projets secrets"])
    return f"wrote /home/{user}/{folder}/log.txt at the end", [user, folder.split()[-1]]


def _ip(r):
    address = f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    return f"rendezvous at {address}:29500", [address]


OTHERS = {
    "keyword-named value (password=, api_key = \"…\")": _keyword_pairs,
    "aws secret access key": _aws_secret,
    "private key block": _private_key,
    "private key body": _key_body,
    "URL credentials and their host": _url_credentials,
    "azure connection string": _azure_connection,
    "bearer token": _bearer,
    "bare internal host name": _internal_host,
    "host= inside a message": _host_in_message,
    "Windows path": _windows_path,
    "UNC path": _unc_path,
    "home path with spaces in prose": _spaced_home,
    "IPv4 address": _ip,
}

KINDS = list(TOKENS) + list(OTHERS)


def planted(seed: int, per_kind: int = 3):
    """(kind, text, secrets) for every kind, ``per_kind`` fresh examples each."""
    rng = random.Random(seed)
    for kind, make in TOKENS.items():
        for _ in range(per_kind):
            token = make(rng)
            yield kind, rng.choice(PLACES)(token), [token]
    for kind, make in OTHERS.items():
        for _ in range(per_kind):
            text, secrets = make(rng)
            yield kind, text, secrets


# Text that must survive redaction unchanged (public names, figures, Python names).
KEPT = [
    "https://docs.pytorch.org/docs/stable/notes/cuda.html", "driver 580.159.04 at 10:06:50", "threading.local",
    "max_new_tokens=512", "torch.nn.functional.scaled_dot_product_attention", "peak allocated 2.31 GiB",
    "optimizer.state[key]", "tokenizer.pad_token_id", "num_key_value_heads=8",
]
