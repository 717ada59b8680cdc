"""TpuBackend: the reference's factory for clients, with its caching."""

import logging

from softtpu._softtpu import TpuClient


class TpuBackend:
    """XLA backend over the TPU driver API, as tpu_client.py defines it."""

    # local:// backends are cached so that repeated create() calls share one
    # in-process worker, as the reference avoids initializing a driver twice.
    _local_backend = None

    @staticmethod
    def create(worker=None, force=False, **client_options):
        """A TpuClient for `worker`.

        worker: "grpc://host:port", "grpc+pod://a,b", "local://..." or
          "local". force: skip the local backend cache. client_options go to
          TpuClient.Get (execute_warn_interval, execute_max_time,
          connection_timeout).
        """
        if worker is None:
            raise ValueError(
                "Failed to create TpuBackend. The `worker` parameter must not "
                "be `None`. Use `local` to connect to a local TPU or "
                "`grpc://host:port` to connect to a remote TPU.")
        # startswith: "record://|file=F|worker=local://" is not the cached
        # local backend.
        if worker == "local" or worker.startswith("local://"):
            if worker == "local":
                worker = "local://"
            if force:
                return TpuClient.Get(worker, **client_options)
            if TpuBackend._local_backend is None:
                logging.getLogger("softtpu").info(
                    "Starting the local TPU driver.")
                TpuBackend._local_backend = TpuClient.Get(
                    worker, **client_options)
            return TpuBackend._local_backend
        return TpuClient.Get(worker, **client_options)
