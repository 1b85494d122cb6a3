"""Cluster topologies drawn from a real clustering with networkx (HFLDD Figs. 5 and 7).

A panel is the server, the H cluster headers linked to it and every member linked to its header (a heterogeneous
cluster is a header and its members); a node's colour is its homogeneous (K-Means) cluster. The layout is
networkx's spring layout with a fixed seed, so the same clustering gives the same picture; an inset shows the
homogeneous clusters alone (each a ring of its clients), as the paper's insets do.
"""
from __future__ import annotations

from pathlib import Path
import networkx as nx

from .figures import _draw_panels

#: a clustering as results/<run>/clustering.json holds it
Clustering = dict


def cluster_graph(clustering: Clustering) -> nx.Graph:
    """Server ``"S"`` - headers - members; node attribute ``homogeneous`` (the K-Means cluster, -1 for the server)
    and ``role`` (server, header, member)."""
    g = nx.Graph()
    g.add_node("S", role="server", homogeneous=-1)
    homo = {c: k for k, members in enumerate(clustering["homogeneous"]) for c in members}
    for header, cluster in zip(clustering["headers"], clustering["heterogeneous"]):
        g.add_node(header, role="header", homogeneous=homo.get(header, -1))
        g.add_edge("S", header)
        for c in cluster:
            if c != header:
                g.add_node(c, role="member", homogeneous=homo.get(c, -1))
                g.add_edge(header, c)
    return g


def homogeneous_graph(clustering: Clustering) -> nx.Graph:
    """Each homogeneous cluster as a ring of its clients (a single client stands alone)."""
    g = nx.Graph()
    for k, members in enumerate(clustering["homogeneous"]):
        g.add_nodes_from(members, homogeneous=k)
        if len(members) > 1:
            nx.add_cycle(g, members)
    return g


def _colours(g: nx.Graph) -> list:
    return ["black" if g.nodes[n]["homogeneous"] < 0 else f"C{g.nodes[n]['homogeneous'] % 10}" for n in g.nodes]


def draw_topology(ax, clustering: Clustering, *, seed: int = 0, inset: bool = True,
                  highlight_below: int = 0) -> None:
    """The heterogeneous topology of ``clustering`` on ``ax`` (and the homogeneous clusters in an inset);
    heterogeneous clusters with fewer than ``highlight_below`` clients are ringed in red (Fig. 7(b)'s point)."""
    g = cluster_graph(clustering)
    pos = nx.spring_layout(g, seed=seed)
    sizes = [60 if g.nodes[n]["role"] == "server" else 28 if g.nodes[n]["role"] == "header" else 12 for n in g.nodes]
    nx.draw_networkx_edges(g, pos, ax=ax, width=0.4, edge_color="0.6")
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=sizes, node_color=_colours(g), linewidths=0)
    small = [n for cl in clustering["heterogeneous"] if len(cl) < highlight_below for n in cl]
    if small:
        nx.draw_networkx_nodes(g, pos, nodelist=small, ax=ax, node_size=40, node_color="none", edgecolors="red",
                               linewidths=0.8)
    ax.set_axis_off()
    if inset:
        sub = ax.inset_axes([0.7, 0.0, 0.3, 0.3])
        h = homogeneous_graph(clustering)
        nx.draw_networkx(h, nx.spring_layout(h, seed=seed), ax=sub, with_labels=False, node_size=4, width=0.3,
                         node_color=_colours(h), edge_color="0.7")
        sub.set_xticks([])
        sub.set_yticks([])
        sub.set_title("homogeneous", fontsize=5)


def topology_panels(panels: dict[str, Clustering | None], out_stem: Path, *, suptitle: str = "", seed: int = 0,
                    inset: bool = True, highlight_below: int = 0, missing: str = "not run") -> list[Path]:
    """One topology per panel (``title -> clustering``, None: ``missing``), as PNG and PDF."""
    return _draw_panels(panels, out_stem, lambda ax, c: draw_topology(ax, c, seed=seed, inset=inset,
                                                                        highlight_below=highlight_below),
                        suptitle=suptitle, missing=missing)


__all__ = ["cluster_graph", "draw_topology", "homogeneous_graph", "topology_panels"]
