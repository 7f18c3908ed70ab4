"""Checks tools/k8s/acld-daemonset.yaml (docs/kubernetes.md): it parses, has
what the device plugin and acld need on a node, and every flag it passes to a
binary is one that binary lists in its --helpfull output."""

import os
import re
import subprocess
import unittest

import yaml

MANIFEST = "tools/k8s/acld-daemonset.yaml"
# The binaries the manifest runs (by their name in /usr/local/bin), as built
# here; paths are relative to the test's runfiles root.
BINARIES = {
    "acld": "daemon/acld",
    "acld_device_plugin": "tools/device_plugin/acld_device_plugin",
    "aclctl": "tools/aclctl/aclctl",
}
REQUIRED_HOST_PATHS = {
    "/run/acld",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/pod-resources",
    "/var/lib/acld",
    "/dev",
}


def flags_of(argv):
    """{name: value or None} of the --name[=value] arguments."""
    flags = {}
    for arg in argv[1:]:
        match = re.fullmatch(r"--([A-Za-z0-9_]+)(?:=(.*))?", arg)
        if match:
            flags[match.group(1)] = match.group(2)
    return flags


_help_cache = {}


def known_flags(binary):
    """The flags a binary's --helpfull lists (Abseil prints "--name (...)")."""
    if binary not in _help_cache:
        result = subprocess.run([BINARIES[binary], "--helpfull"], capture_output=True, text=True,
                                timeout=30)
        text = result.stdout + result.stderr
        _help_cache[binary] = set(re.findall(r"^\s+--([A-Za-z0-9_]+) \(", text, re.MULTILINE))
    return _help_cache[binary]


class ManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MANIFEST) as f:
            documents = [d for d in yaml.safe_load_all(f) if d is not None]
        cls.documents = documents
        cls.daemonset = next(d for d in documents if d.get("kind") == "DaemonSet")
        cls.pod = cls.daemonset["spec"]["template"]["spec"]
        cls.containers = {c["name"]: c for c in cls.pod["containers"]}

    def command_lines(self):
        """Every argv the manifest runs: container commands and exec probes."""
        for container in self.pod["containers"]:
            yield container["name"], container["command"] + container.get("args", [])
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                if probe in container and "exec" in container[probe]:
                    yield container["name"] + " " + probe, container[probe]["exec"]["command"]

    def test_is_a_daemonset_whose_selector_matches_its_pods(self):
        self.assertEqual(self.daemonset["apiVersion"], "apps/v1")
        selector = self.daemonset["spec"]["selector"]["matchLabels"]
        labels = self.daemonset["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(selector)
        for key, value in selector.items():
            self.assertEqual(labels.get(key), value)

    def test_pod_shares_the_hosts_pids(self):
        self.assertIs(self.pod.get("hostPID"), True)

    def test_runs_acld_and_the_plugin(self):
        binaries = {os.path.basename(c["command"][0]) for c in self.pod["containers"]}
        self.assertEqual(binaries, {"acld", "acld_device_plugin"})

    def test_every_flag_exists_in_its_binary(self):
        for where, argv in self.command_lines():
            binary = os.path.basename(argv[0])
            self.assertIn(binary, BINARIES, where)
            known = known_flags(binary)
            self.assertGreater(len(known), 5, f"{binary} --helpfull listed no flags")
            for flag in flags_of(argv):
                self.assertIn(flag, known, f"{where}: {binary} has no --{flag}")

    def test_host_paths_and_mounts(self):
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        host_paths = {v["hostPath"]["path"] for v in volumes.values() if "hostPath" in v}
        self.assertTrue(REQUIRED_HOST_PATHS <= host_paths, REQUIRED_HOST_PATHS - host_paths)
        for container in self.pod["containers"]:
            for mount in container.get("volumeMounts", []):
                self.assertIn(mount["name"], volumes, container["name"])
        # acld's directory is at the same path in both containers as on the
        # host: the plugin hands the kubelet acld's path of a group directory.
        for name in ("acld", "device-plugin"):
            mounts = {m["mountPath"]: volumes[m["name"]] for m in
                      self.containers[name]["volumeMounts"]}
            self.assertEqual(mounts["/run/acld"]["hostPath"]["path"], "/run/acld", name)
        plugin_mounts = {m["mountPath"] for m in self.containers["device-plugin"]["volumeMounts"]}
        self.assertIn("/var/lib/kubelet/device-plugins", plugin_mounts)
        self.assertIn("/var/lib/kubelet/pod-resources", plugin_mounts)
        acld_mounts = {m["mountPath"] for m in self.containers["acld"]["volumeMounts"]}
        self.assertIn("/var/lib/acld", acld_mounts)
        self.assertIn("/dev", acld_mounts)

    def test_flags_agree_between_acld_and_the_plugin(self):
        acld = flags_of(self.containers["acld"]["command"])
        plugin = flags_of(self.containers["device-plugin"]["command"])
        self.assertEqual(acld["admin_socket"], plugin["admin_socket"])
        self.assertTrue(acld["socket"].startswith("/run/acld/"))
        self.assertEqual(acld["state_dir"], "/var/lib/acld")
        self.assertEqual(os.path.dirname(plugin["kubelet_socket"]),
                         "/var/lib/kubelet/device-plugins")
        self.assertTrue(plugin["pod_resources_socket"].startswith(
            "/var/lib/kubelet/pod-resources/"))

    def test_metrics_port_is_exposed(self):
        address = flags_of(self.containers["acld"]["command"])["metrics_address"]
        port = int(address.rsplit(":", 1)[1])
        ports = {p["containerPort"] for p in self.containers["acld"].get("ports", [])}
        self.assertIn(port, ports)
        annotations = self.daemonset["spec"]["template"]["metadata"].get("annotations", {})
        self.assertEqual(annotations.get("prometheus.io/port"), str(port))

    def test_metrics_ask_for_credentials_from_a_secret(self):
        # A NetworkPolicy cannot keep out the users of the pod's own node.
        flags = flags_of(self.containers["acld"]["command"])
        credentials = flags["metrics_credentials_file"]
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mounts = [m for m in self.containers["acld"]["volumeMounts"]
                  if credentials.startswith(m["mountPath"].rstrip("/") + "/")]
        self.assertEqual(len(mounts), 1, "the credentials file is on one mount")
        secret = volumes[mounts[0]["name"]].get("secret")
        self.assertTrue(secret and secret.get("secretName"), "mounted from a Secret")
        self.assertEqual(secret.get("defaultMode"), 0o400)

    def test_only_metrics_readers_reach_the_acld_pod(self):
        # Its metrics name every NPU pod and what it uses: any pod in the
        # cluster reaching 0.0.0.0:9464 read them.
        policies = [d for d in self.documents if d.get("kind") == "NetworkPolicy"]
        pod_labels = self.daemonset["spec"]["template"]["metadata"]["labels"]
        selecting = [p for p in policies
                     if p["spec"]["podSelector"].get("matchLabels", {}).items() <= pod_labels.items()
                     and p["spec"]["podSelector"].get("matchLabels")]
        self.assertEqual(len(selecting), 1, "one NetworkPolicy selects the acld pod")
        spec = selecting[0]["spec"]
        self.assertIn("Ingress", spec["policyTypes"])
        address = flags_of(self.containers["acld"]["command"])["metrics_address"]
        port = int(address.rsplit(":", 1)[1])
        self.assertTrue(spec["ingress"], "some ingress is allowed: the metrics")
        for rule in spec["ingress"]:
            self.assertTrue(rule.get("from"), "an ingress rule open to every pod")
            for peer in rule["from"]:
                self.assertTrue(peer.get("namespaceSelector", {}).get("matchLabels") or
                                peer.get("podSelector", {}).get("matchLabels"),
                                "an ingress peer that selects everyone")
            self.assertEqual([p["port"] for p in rule["ports"]], [port])

    def test_acld_may_reach_the_npus(self):
        self.assertIs(self.containers["acld"]["securityContext"].get("privileged"), True)


if __name__ == "__main__":
    unittest.main()
