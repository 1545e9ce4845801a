"""What a cluster job adds to a crawl's settings: :class:`ClusterSettings`, and the rule
documents a job carries (:class:`ShippedRules`)."""

from typing import Annotated, Literal

from msgspec import Meta

from gossamer.settings.base import SettingsModel

__all__ = [
    "ClusterAllocator",
    "ClusterClaimTimeout",
    "ClusterHeartbeat",
    "ClusterPartitionBy",
    "ClusterPartitions",
    "ClusterSettings",
    "ShippedDocument",
    "ShippedRules",
]

ClusterPartitions = Annotated[
    int, Meta(ge=1, le=65_536, description="Virtual partitions the job's hosts map to.")
]
ClusterHeartbeat = Annotated[
    float, Meta(ge=0.5, le=3600, description="Seconds a silent worker counts alive.")
]
ClusterClaimTimeout = Annotated[
    float, Meta(ge=1, le=86_400, description="Seconds a dead worker's URLs stay claimed.")
]
ClusterPartitionBy = Annotated[
    Literal["host", "url"],
    Meta(
        description="Partition by host (one owner per host) or by URL (one host's URLs "
        "spread over every worker; per-host limits kept through Redis)."
    ),
]
ClusterAllocator = Annotated[
    Literal["equal", "weighted", "bpnn-pso", "first-fit", "least-loaded"],
    Meta(description="How partitions are shared among the workers."),
]
"""The cluster settings' types, of :class:`ClusterSettings` and :class:`JobSettings` (a Struct
has one base with fields, so JobSettings declares them again, with the same defaults)."""


class ClusterSettings(SettingsModel, frozen=True, kw_only=True):
    """What a cluster job adds to a crawl's settings (``cluster submit``, ``cluster up``)."""

    partitions: ClusterPartitions = 4096
    heartbeat_ttl: ClusterHeartbeat = 10.0
    claim_timeout: ClusterClaimTimeout = 60.0
    partition_by: ClusterPartitionBy = "host"
    allocator: ClusterAllocator = "equal"


class ShippedDocument(SettingsModel, frozen=True, kw_only=True):
    """A rule document as a cluster job carries it: its file name and text."""

    name: Annotated[str, Meta(description="The document's file name.")]
    text: Annotated[
        str, Meta(description="The document's text (TOML or JSON, by the name's suffix).")
    ]


class ShippedRules(SettingsModel, frozen=True, kw_only=True):
    """The rule documents of a cluster job, with their digest: every worker compiles these
    texts, not files of its own, and checks the digest first."""

    documents: Annotated[list[ShippedDocument], Meta(description="The documents, in order.")]
    digest: Annotated[
        str,
        Meta(pattern=r"\A[0-9a-f]{64}\Z", description="SHA-256 of the documents' names and texts."),
    ]
