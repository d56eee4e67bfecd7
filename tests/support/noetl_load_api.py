"""The load-test endpoints of NoETL's test server: FHIR-like patient records, reference-chain items.

Written from NoETL's own test server, ``fixtures/servers/paginated_api.py`` of ``noetl/e2e`` at
commit ``1e41859`` (the commit tests/corpus/noetl-e2e was copied from; Apache-2.0, its LICENSE
beside that copy): the same answers, page counts and bounds, with its defaults.
``tests/support/paginated_api.py`` serves them; these functions build the answers.

=================================================  =========================================================
``GET /api/v1/patient-records?patientId&page``     a FHIR Bundle of MedicationStatement entries: ``{resourceType:
``&pageSize&min_delay&max_delay&payload_kb``       Bundle, type: searchset, total, link: [self, next], entry:
``&rate_limit``                                    [{fullUrl, resource}], meta: {patientId, page, pageSize,
                                                   totalPages, delaySeconds, estimatedResponseKB}}``; 2 to 5
                                                   pages per patient (md5 of its id), ``pageSize`` entries
                                                   padded to about ``payload_kb`` KiB a page (default 100),
                                                   after a delay between ``min_delay`` and ``max_delay``
                                                   seconds (default 2 and 4); a page past the last: 404; past
                                                   ``rate_limit`` requests in one second (default 50): 429 with
                                                   ``Retry-After: 1``
``GET /api/v1/reference-chain/items?page``         ``{data: [{record_id, record_ref, prev_ref, batch,
``&pageSize&total&payload_kb&ref_mode``            payload}], paging: {hasMore, page, pageSize, total,
``&chain_window``                                  nextPage}, refs: {mode, root_ref, page_ref, prev_page_ref,
                                                   next_page_ref, chain, chain_length}, meta}``: ``total``
                                                   records (default 382) in pages of ``pageSize`` (default 25),
                                                   each with a ``payload_kb`` KiB payload; ``ref_mode`` linked
                                                   (the previous and this page's refs), windowed (the last
                                                   ``chain_window``) or expanded (all)
=================================================  =========================================================
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["RECORDS_RATE_LIMIT", "RECORDS_DELAY_S", "records_page_count", "patient_records", "chain_items"]

RECORDS_RATE_LIMIT = 50            # requests a second (NoETL's PATIENT_RECORDS_RATE_LIMIT)
RECORDS_DELAY_S = (2.0, 4.0)       # NoETL's PATIENT_RECORDS_MIN_DELAY, _MAX_DELAY
_RECORDS_PAGES = (2, 5)            # NoETL's PATIENT_RECORDS_MIN_PAGES, _MAX_PAGES
_RECORDS_PAYLOAD_KB = 100          # NoETL's PATIENT_RECORDS_PAYLOAD_KB
CHAIN_TOTAL_ITEMS = 382            # NoETL's REFERENCE_CHAIN_TOTAL_ITEMS


def _seed(text: str) -> int:
    return int(hashlib.md5(text.encode()).hexdigest(), 16)  # noqa: S324 - NoETL's seed, not security


def records_page_count(patient_id: str) -> int:
    """The pages of records ``patient_id`` has: fixed per patient, so reruns agree."""
    low, high = _RECORDS_PAGES
    return low + _seed(patient_id) % (high - low + 1)


def _entry(patient_id: str, index: int, page: int, padding: int) -> dict[str, Any]:
    entry_id = f"{patient_id}-p{page}-e{index}"
    return {
        "fullUrl": f"MedicationStatement/{entry_id}",
        "resource": {
            "resourceType": "MedicationStatement", "id": entry_id, "status": "active",
            "subject": {"reference": f"Patient/{patient_id}"},
            "medicationCodeableConcept": {
                "coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": str(1000 + index),
                            "display": f"Drug-{index}"}],
                "text": f"Medication record for patient {patient_id}"},
            "effectivePeriod": {"start": "2024-01-01", "end": "2024-12-31"},
            "dosage": [{"text": "1 tablet daily", "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}],
            "_payload": "M" * padding,
        },
    }


def patient_records(base_url: str, patient_id: str, page: int, page_size: int, payload_kb: int | None,
                    delay: float) -> tuple[int, dict[str, Any]]:
    """The answer (status, body) for one page of ``patient_id``'s records, ``delay`` already waited."""
    total_pages = records_page_count(patient_id)
    if page > total_pages:
        return 404, {"detail": f"Page {page} does not exist for patient {patient_id}"}
    target_kb = _RECORDS_PAYLOAD_KB if payload_kb is None else payload_kb
    padding = max(100, (target_kb * 1024) // max(page_size, 1) - 600)
    entries = [_entry(patient_id, (page - 1) * page_size + i, page, padding) for i in range(page_size)]
    url = f"{base_url}/api/v1/patient-records?patientId={patient_id}&page={{}}&pageSize={page_size}"
    links = [{"relation": "self", "url": url.format(page)}]
    if page < total_pages:
        links.append({"relation": "next", "url": url.format(page + 1)})
    return 200, {
        "resourceType": "Bundle", "type": "searchset", "total": total_pages * page_size, "link": links,
        "entry": entries,
        "meta": {"patientId": patient_id, "page": page, "pageSize": page_size, "totalPages": total_pages,
                 "delaySeconds": round(delay, 2), "estimatedResponseKB": padding * len(entries) // 1024},
    }


def _payload(payload_kb: int, seed: str) -> str:
    size = max(0, payload_kb) * 1024
    block = hashlib.sha256(seed.encode()).hexdigest()
    return (block * (size // len(block) + 1))[:size]


def _chain(mode: str, page: int, window: int) -> tuple[str, list[str]]:
    if mode == "expanded":
        return mode, [f"page-{p:06d}" for p in range(1, page + 1)]
    if mode == "windowed":
        first = max(1, page - max(1, min(window, 50)) + 1)
        return mode, [f"page-{p:06d}" for p in range(first, page + 1)]
    return "linked", [f"page-{p:06d}" for p in (page - 1, page) if p >= 1]


def chain_items(page: int, page_size: int, total: int, payload_kb: int, ref_mode: str,
                chain_window: int) -> dict[str, Any]:
    """One page of the reference-chain records, with its bounded (or not) chain of page refs."""
    size, total = max(1, min(page_size, 200)), max(1, min(total, 20000))
    page = min(max(1, page), max(1, (total + size - 1) // size))
    payload_kb = max(0, min(payload_kb, 256))
    start, end = (page - 1) * size, min(page * size, total)
    has_more = end < total
    records = [{"record_id": i, "record_ref": f"record-{i:06d}", "prev_ref": f"record-{i - 1:06d}" if i > 1 else None,
                "batch": (i - 1) // size + 1, "payload": _payload(payload_kb, f"item-{i}")}
               for i in range(start + 1, end + 1)]
    mode, chain = _chain(str(ref_mode or "linked").lower(), page, chain_window)
    return {
        "data": records,
        "paging": {"hasMore": has_more, "page": page, "pageSize": size, "total": total,
                   "nextPage": page + 1 if has_more else None},
        "refs": {"mode": mode, "root_ref": "run-root-000001", "page_ref": f"page-{page:06d}",
                 "prev_page_ref": f"page-{page - 1:06d}" if page > 1 else None,
                 "next_page_ref": f"page-{page + 1:06d}" if has_more else None,
                 "chain": chain, "chain_length": len(chain)},
        "meta": {"payload_kb_per_record": payload_kb, "approx_response_kb": len(records) * payload_kb + 1},
    }
