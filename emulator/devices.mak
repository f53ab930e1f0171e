# The devices run-qemu.sh uses, and nothing else: the q35 board, its
# serial ports, the virtio disk and isa-debug-exit for the guest's verdict.
CONFIG_Q35=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_ISA_DEBUG=y
