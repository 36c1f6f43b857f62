#!/usr/bin/python3
"""A HAMi user's pods on xpool, driven by the real clients (run by hami_e2e_test.cc, which starts the rest).

Plays the parts of a cluster around xpool's components:
  - the user and the cluster admin: Node and Pod objects built with python3-kubernetes' models and created with its
    CoreV1Api against the (fake) API server, which canonicalizes quantities and calls xpool's webhook;
  - kube-scheduler: the extender's filter / prioritize / bind with the pod as the API server returns it, serialized
    by ApiClient().sanitize_for_serialization;
  - kubelet: a python3-grpcio Registration server on kubelet.sock that the device plugin registers with, then
    ListAndWatch, GetPreferredAllocation and Allocate against the plugin's socket.
The pods are written after HAMi's examples/nvidia/*.yaml. Exits 0 when every check holds; prints what failed.

Usage: hami_cluster_e2e.py --api URL --extender URL --plugin-dir DIR --proto FILE --node NAME
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent import futures

import grpc
from kubernetes import client

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return condition


def load_proto(proto_file):
    """Compiles the device plugin API with protoc into a temporary module (messages only; no gRPC codegen)."""
    out = tempfile.mkdtemp(prefix="xpool-pb-")
    include = os.path.dirname(os.path.dirname(os.path.dirname(proto_file)))
    subprocess.run(["protoc", "-I", include, "--python_out", out, os.path.relpath(proto_file, include)], check=True)
    sys.path.insert(0, out)
    from deviceplugin.v1beta1 import api_pb2  # noqa: E402  (generated above)
    return api_pb2


class KubeletStub:
    """kubelet's side of the device plugin API: Registration on kubelet.sock, a client of the plugin's socket."""

    def __init__(self, pb, plugin_dir):
        self.pb = pb
        self.plugin_dir = plugin_dir
        self.registered = threading.Event()
        self.request = None
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(
                self.register, request_deserializer=pb.RegisterRequest.FromString,
                response_serializer=pb.Empty.SerializeToString)})
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port("unix:" + os.path.join(plugin_dir, "kubelet.sock"))
        self.server.start()

    def register(self, request, context):
        self.request = request
        self.registered.set()
        return self.pb.Empty()

    def plugin(self):
        channel = grpc.insecure_channel("unix:" + os.path.join(self.plugin_dir, self.request.endpoint))
        pb = self.pb

        def unary(name, request_type, response_type):
            return channel.unary_unary("/v1beta1.DevicePlugin/" + name,
                                       request_serializer=request_type.SerializeToString,
                                       response_deserializer=response_type.FromString)

        class Plugin:
            list_and_watch = channel.unary_stream("/v1beta1.DevicePlugin/ListAndWatch",
                                                  request_serializer=pb.Empty.SerializeToString,
                                                  response_deserializer=pb.ListAndWatchResponse.FromString)
            preferred = unary("GetPreferredAllocation", pb.PreferredAllocationRequest, pb.PreferredAllocationResponse)
            allocate = unary("Allocate", pb.AllocateRequest, pb.AllocateResponse)
        return Plugin


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def container(name, limits):
    return client.V1Container(name=name, image="ubuntu:22.04", command=["bash", "-c", "sleep 86400"],
                              resources=client.V1ResourceRequirements(limits=limits))


def hami_examples():
    """Pods written after HAMi's examples/nvidia/*.yaml: (pod, {container: expected device count})."""
    meta = client.V1ObjectMeta
    return [
        # use_exclusive_card.yaml: whole devices.
        client.V1Pod(api_version="v1", kind="Pod", metadata=meta(name="gpu-pod1"), spec=client.V1PodSpec(
            containers=[container("ubuntu-container", {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 100,
                                                       "nvidia.com/gpucores": 100})])),
        # default_use.yaml: 2 GPUs, 3000 MiB and 30% of each (the API server stores gpumem as "3k").
        client.V1Pod(api_version="v1", kind="Pod", metadata=meta(name="gpu-pod"), spec=client.V1PodSpec(
            containers=[container("ubuntu-container",
                                  {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000, "nvidia.com/gpucores": 30})])),
        # use_memory_fraction.yaml: 50% of each device's memory.
        client.V1Pod(api_version="v1", kind="Pod", metadata=meta(name="gpu-pod-fraction"), spec=client.V1PodSpec(
            containers=[container("ubuntu-container", {"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 50,
                                                       "nvidia.com/gpucores": 30})])),
        # specify_card_type_to_use.yaml: only A100 or V100 devices.
        client.V1Pod(api_version="v1", kind="Pod",
                     metadata=meta(name="gpu-pod-type", annotations={"nvidia.com/use-gputype": "A100,V100"}),
                     spec=client.V1PodSpec(containers=[container("ubuntu-container", {"nvidia.com/gpu": 2})])),
        # Round numbers the API server rewrites (8000 -> "8k"), and an init container, as Kubernetes counts them.
        client.V1Pod(api_version="v1", kind="Pod", metadata=meta(name="round-memory"), spec=client.V1PodSpec(
            init_containers=[container("warmup", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": "1Ki"})],
            containers=[container("main", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": 8000})])),
    ]


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--api", "--extender", "--plugin-dir", "--proto", "--node"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    pb = load_proto(args.proto)
    kubelet = KubeletStub(pb, args.plugin_dir)

    config = client.Configuration()
    config.host = args.api
    api_client = client.ApiClient(config)
    core = client.CoreV1Api(api_client)

    node = client.V1Node(api_version="v1", kind="Node", metadata=client.V1ObjectMeta(
        name=args.node, labels={"xpool.io/accelerator": "true"}), status=client.V1NodeStatus(
        capacity={"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "80"},
        allocatable={"cpu": "63500m", "memory": "262144Mi", "nvidia.com/gpu": 80},
        conditions=[client.V1NodeCondition(type="Ready", status="True")]))
    created = core.create_node(node)
    check(created.status.allocatable["memory"] == "256Gi", "node memory in canonical form: " +
          str(created.status.allocatable["memory"]))

    check(kubelet.registered.wait(20), "the device plugin registers with kubelet")
    request = kubelet.request
    check(request.version == "v1beta1", "Register version " + request.version)
    check(request.resource_name == "nvidia.com/gpu", "Register resource " + request.resource_name)
    check(request.options.get_preferred_allocation_available, "Register asks for GetPreferredAllocation")
    plugin = kubelet.plugin()
    slots = [d.ID for d in next(plugin.list_and_watch(pb.Empty(), timeout=10)).devices]
    check(len(slots) == 80, "ListAndWatch: 8 devices x 10 slots, got %d" % len(slots))

    deadline = time.time() + 20
    while "xpool.io/node-devices" not in (core.read_node(args.node).metadata.annotations or {}):
        if time.time() > deadline:
            check(False, "the device plugin publishes xpool.io/node-devices on the node")
            return 1
        time.sleep(0.05)

    used = set()
    for pod in hami_examples():
        name = pod.metadata.name
        stored = core.create_namespaced_pod("default", pod)
        check(stored.spec.scheduler_name == "xpool-scheduler", name + ": the webhook routes it to xpool")
        if name == "gpu-pod":
            check(stored.spec.containers[0].resources.limits["nvidia.com/gpumem"] == "3k",
                  "gpumem 3000 is stored as 3k: " + str(stored.spec.containers[0].resources.limits))
        if name == "round-memory":
            check(stored.spec.containers[0].resources.limits["nvidia.com/gpumem"] == "8k", "8000 is stored as 8k")
        # kube-scheduler: the pod as the API server returns it, serialized by the official client.
        wire = api_client.sanitize_for_serialization(core.read_namespaced_pod(name, "default"))
        filtered = post(args.extender + "/filter", {"Pod": wire, "Nodes": None, "NodeNames": [args.node]})
        if not check(filtered.get("NodeNames") == [args.node], name + ": filter passes the node: " + json.dumps(filtered)):
            continue
        scores = post(args.extender + "/prioritize", {"Pod": wire, "Nodes": None, "NodeNames": [args.node]})
        check(len(scores) == 1 and scores[0]["Host"] == args.node, name + ": prioritize scores the node")
        bound = post(args.extender + "/bind", {"PodName": name, "PodNamespace": "default",
                                               "PodUID": wire["metadata"]["uid"], "Node": args.node})
        if not check(not bound.get("Error"), name + ": bind: " + json.dumps(bound)):
            continue
        after = core.read_namespaced_pod(name, "default")
        check(after.spec.node_name == args.node, name + ": bound to the node")
        allocation = json.loads(after.metadata.annotations["xpool.io/allocation"])
        # kubelet: each container (init containers first) gets slots, the plugin's preference, then Allocate.
        for granted in allocation["containers"]:
            count = len(granted["devices"])
            free = [s for s in slots if s not in used]
            preferred = plugin.preferred(pb.PreferredAllocationRequest(container_requests=[
                pb.ContainerPreferredAllocationRequest(available_deviceIDs=free, allocation_size=count)]), timeout=10)
            ids = list(preferred.container_responses[0].deviceIDs)
            check(len(ids) == count, "%s/%s: %d preferred slots" % (name, granted["name"], len(ids)))
            used.update(ids)
            answer = plugin.allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=ids)]), timeout=10).container_responses[0]
            uuids = [d["uuid"] for d in granted["devices"]]
            where = "%s/%s" % (name, granted["name"])
            check(answer.envs.get("NVIDIA_VISIBLE_DEVICES") == ",".join(uuids),
                  where + ": NVIDIA_VISIBLE_DEVICES=" + answer.envs.get("NVIDIA_VISIBLE_DEVICES", "(none)"))
            check(sorted({s.split("::")[0] for s in ids}) == sorted(uuids), where + ": preferred slots on its devices")
            paths = [d.container_path for d in answer.devices]
            for d in granted["devices"]:
                check("/dev/nvidia%d" % d["index"] in paths, where + ": DeviceSpec /dev/nvidia%d in %s" % (d["index"], paths))
            check("/dev/nvidiactl" in paths and "/dev/nvidia-uvm" in paths, where + ": control device nodes")
            check(all(d.permissions == "rw" for d in answer.devices), where + ": device permissions rw")
            for i, d in enumerate(granted["devices"]):
                check(answer.envs.get("XPOOL_DEVICE_MEMORY_LIMIT_%d" % i) == str(d["memoryMiB"]),
                      where + ": memory limit of device %d" % i)
            mounts = {m.container_path: m for m in answer.mounts}
            check("/etc/ld.so.preload" in mounts and mounts["/etc/ld.so.preload"].read_only,
                  where + ": the runtime library is preloaded by a read-only /etc/ld.so.preload")
            check("LD_PRELOAD" not in answer.envs, where + ": no LD_PRELOAD the user could unset")
            region = answer.envs.get("XPOOL_SHARED_REGION", "")
            check(os.path.dirname(region) in mounts and not mounts[os.path.dirname(region)].read_only,
                  where + ": the shared region is on a writable host mount")
        if name == "round-memory":
            check(allocation["containers"][0].get("init") is True, "the init container is marked in the allocation")
            check(allocation["containers"][1]["devices"][0]["memoryMiB"] == 8000, "8k is 8000 MiB")
        if name == "gpu-pod":
            check(all(d["memoryMiB"] == 3000 and d["computeMilli"] == 300
                      for d in allocation["containers"][0]["devices"]), "gpu-pod: 3000 MiB and 30% per device")

    # A quantity the API server refuses never reaches xpool.
    try:
        core.create_namespaced_pod("default", client.V1Pod(
            api_version="v1", kind="Pod", metadata=client.V1ObjectMeta(name="typo"),
            spec=client.V1PodSpec(containers=[container("c", {"nvidia.com/gpumem": "8 Gi"})])))
        check(False, "a malformed quantity is refused")
    except client.exceptions.ApiException as e:
        check(e.status == 422 and "nvidia.com/gpumem" in e.body, "422 naming the field: %s %s" % (e.status, e.body))
    # A fractional one is valid for Kubernetes: xpool's webhook denies it, naming the field.
    try:
        core.create_namespaced_pod("default", client.V1Pod(
            api_version="v1", kind="Pod", metadata=client.V1ObjectMeta(name="fraction"),
            spec=client.V1PodSpec(containers=[container("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "2.5"})])))
        check(False, "a fractional gpumem is denied")
    except client.exceptions.ApiException as e:
        check(e.status == 400 and "nvidia.com/gpumem" in e.body and "whole number" in e.body,
              "the webhook denies 2.5 MiB naming the field: " + e.body)

    kubelet.server.stop(0)
    print("%d failure(s)" % len(FAILURES), flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
