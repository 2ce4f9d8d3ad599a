"""Run the mirror: ``python -m examples.configmap_mirror [--kubeconfig PATH]``."""

import argparse
import threading

import pyctrl
from examples.configmap_mirror import NAME, setup

parser = argparse.ArgumentParser(prog=NAME)
parser.add_argument("--kubeconfig", default=None)
manager = pyctrl.Manager(pyctrl.RESTClient.from_kubeconfig(parser.parse_args().kubeconfig),
                         pyctrl.ManagerOptions(component=NAME))
setup(manager)
stop = threading.Event()
pyctrl.install_signal_handlers(stop)
manager.run(stop)
