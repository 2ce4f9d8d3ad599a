"""What cert-manager does for manifests/components/webhook, for `make cluster`'s node only.

cert-manager's images come from quay.io, which this machine cannot reach, and building its
controller, webhook and CA injector from the Go module proxy takes longer than the node itself.
This stands in for the three on the one path the webhook component uses, as a one-shot:

    cert_manager_standin.py KUBECTL KUBECONFIG

1. cert-manager's own CRDs (Issuer, ClusterIssuer, Certificate, CertificateRequest) from its
   module in the Go module proxy (CERT_MANAGER_VERSION, default v1.16.2; the Helm template
   labels dropped), so the component's Issuer and Certificate apply as they would.
2. For every Certificate whose issuerRef is a selfSigned Issuer and whose Secret is missing:
   a self-signed certificate for its dnsNames with its privateKey algorithm (openssl), stored
   as the kubernetes.io/tls Secret cert-manager writes (tls.crt, tls.key, ca.crt). No renewal.
3. For every Mutating/ValidatingWebhookConfiguration annotated cert-manager.io/inject-ca-from:
   every webhook's clientConfig.caBundle set to that Certificate Secret's ca.crt.

Idempotent: run it before `make deploy` (CRDs) and after (Secrets, caBundles).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

VERSION = os.environ.get("CERT_MANAGER_VERSION", "v1.16.2")
CRDS = ("issuers", "clusterissuers", "certificates", "certificaterequests")
INJECT = "cert-manager.io/inject-ca-from"


def kubectl(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={KUBECONFIG}", *args], input=stdin,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"cert-manager stand-in: kubectl {' '.join(args)}: {done.stderr}")
    return done.stdout


def install_crds() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        info = json.loads(subprocess.run(
            ["go", "mod", "download", "-json", f"github.com/cert-manager/cert-manager@{VERSION}"],
            cwd=tmp, capture_output=True, text=True, check=True).stdout)
    crds = []
    for name in CRDS:
        text = (Path(info["Dir"]) / "deploy" / "crds" / f"crd-{name}.yaml").read_text()
        # Helm's template labels ('{{ template ... }}') are not valid label values.
        crds.append("\n".join(line for line in text.splitlines() if "'{{" not in line))
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin="\n---\n".join(crds))
    kubectl("wait", "--for=condition=Established", "--timeout=60s",
            *[f"crd/{name}.cert-manager.io" for name in CRDS])


def _self_signed(cert: dict[str, Any]) -> dict[str, str]:
    spec = cert["spec"]
    names = spec.get("dnsNames") or []
    key_spec = spec.get("privateKey") or {}
    with tempfile.TemporaryDirectory() as tmp:
        key, crt = Path(tmp) / "tls.key", Path(tmp) / "tls.crt"
        if key_spec.get("algorithm", "RSA") == "ECDSA":
            curve = {256: "prime256v1", 384: "secp384r1"}[int(key_spec.get("size", 256))]
            newkey = ["-newkey", "ec", "-pkeyopt", f"ec_paramgen_curve:{curve}"]
        else:
            newkey = ["-newkey", f"rsa:{int(key_spec.get('size', 2048))}"]
        subprocess.run(
            ["openssl", "req", "-x509", *newkey, "-nodes", "-days", "30",
             "-subj", f"/CN={names[0] if names else cert['metadata']['name']}",
             "-addext", "subjectAltName=" + ",".join(f"DNS:{n}" for n in names),
             "-keyout", str(key), "-out", str(crt)],
            capture_output=True, check=True)
        pem_key = key.read_bytes()
        pem_crt = crt.read_bytes()
    return {"tls.crt": _b64(pem_crt), "tls.key": _b64(pem_key), "ca.crt": _b64(pem_crt)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def issue() -> None:
    certs = json.loads(kubectl("get", "certificates.cert-manager.io", "-A", "-o", "json"))
    for cert in certs["items"]:
        ns, name = cert["metadata"]["namespace"], cert["metadata"]["name"]
        secret = cert["spec"]["secretName"]
        ref = cert["spec"]["issuerRef"]
        if ref.get("kind", "Issuer") != "Issuer":
            print(f"cert-manager stand-in: {ns}/{name}: only Issuers are stood in for",
                  file=sys.stderr)
            continue
        issuer = json.loads(kubectl("-n", ns, "get", "issuers.cert-manager.io", ref["name"],
                                    "-o", "json"))
        if "selfSigned" not in issuer["spec"]:
            print(f"cert-manager stand-in: {ns}/{name}: only selfSigned Issuers are stood in for",
                  file=sys.stderr)
            continue
        if kubectl("-n", ns, "get", "secret", secret, "--ignore-not-found", "-o", "name"):
            continue
        obj = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": secret, "namespace": ns,
                            "annotations": {"cert-manager.io/certificate-name": name,
                                            "cert-manager.io/issuer-name": ref["name"]}},
               "data": _self_signed(cert)}
        kubectl("apply", "-f", "-", stdin=json.dumps(obj))
        print(f"cert-manager stand-in: issued {ns}/{secret} for Certificate {name}",
              file=sys.stderr)


def inject() -> None:
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for conf in json.loads(kubectl("get", kind, "-o", "json"))["items"]:
            source = (conf["metadata"].get("annotations") or {}).get(INJECT)
            if not source:
                continue
            ns, cert_name = source.split("/", 1)
            cert = json.loads(kubectl("-n", ns, "get", "certificates.cert-manager.io", cert_name,
                                      "-o", "json"))
            secret = json.loads(kubectl("-n", ns, "get", "secret", cert["spec"]["secretName"],
                                        "-o", "json"))
            ca = secret["data"]["ca.crt"]
            patch = [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": ca}
                     for i in range(len(conf.get("webhooks") or []))]
            if patch:
                kubectl("patch", kind, conf["metadata"]["name"], "--type=json",
                        "-p", json.dumps(patch))
                print(f"cert-manager stand-in: caBundle of {kind}/{conf['metadata']['name']}",
                      file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    KUBECTL, KUBECONFIG = sys.argv[1], sys.argv[2]
    install_crds()
    issue()
    inject()
