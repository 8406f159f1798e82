"""A Ray cluster of several nodes on this machine, on loopback, for tests and
measurements of ``sweep(backend="ray")`` (a real cluster: ``ray up``, or
``ray.init(address=...)`` of an existing head; see the README)."""

LOOPBACK = "127.0.0.1"


def start(nodes: int = 2, num_cpus: int = 1, object_store_bytes: int = 100 << 20):
    """Starts a head and ``nodes - 1`` more nodes, ``num_cpus`` each, connects
    this process to it (``ray.init``) and returns the ``ray.cluster_utils.Cluster``
    (``ray.shutdown(); cluster.shutdown()`` stops it)."""
    import ray
    from ray import _private
    from ray.cluster_utils import Cluster

    # Every node on loopback, so no traffic leaves this machine: Ray would
    # otherwise take the address of the interface with the default route.
    _private.services.get_node_ip_address = lambda *args, **kwargs: LOOPBACK
    args = {"num_cpus": num_cpus, "object_store_memory": object_store_bytes, "node_ip_address": LOOPBACK}
    c = Cluster(initialize_head=True, head_node_args={**args, "include_dashboard": False})
    for _ in range(nodes - 1):
        c.add_node(**args)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    return c
