"""What getEntityInfo says about each entity and field: ICAT's own documentation strings.

Comments of the Java entity classes (``@Comment``) of each API generation; missing ones are "".
"""

from __future__ import annotations

#: entity name → (class comment, {field name: comment})
EntityComments = dict[str, tuple[str, dict[str, str]]]


COMMENTS_6_2: EntityComments = {
    "Affiliation": (
        "The home institute or other affiliation of a user in the context of a data publication",
        {
            "fullReference": "The full reference of the affiliation, optionally including street address and department, as it should appear in the publication",
            "name": "An internal name for that affiliation entry, possibly the organization name",
            "pid": "Identifier such as ROR or ISNI",
        },
    ),
    "Application": (
        "Some piece of software",
        {
            "name": "A short name for the software - e.g. mantid",
        },
    ),
    "DataCollection": (
        "A set of Investigations, Datasets and Datafiles which can span Facilities. Note that it has no constraint fields. It is expected that a DataCollection would be identified by its parameters or its relationship to a Job.",
        {
            "doi": "The Digital Object Identifier associated with this data file",
        },
    ),
    "DataCollectionDatafile": (
        "Represents a many-to-many relationship between a DataCollection and its Datafiles.",
        {},
    ),
    "DataCollectionDataset": (
        "Represents a many-to-many relationship between a DataCollection and its datasets.",
        {},
    ),
    "DataCollectionInvestigation": (
        "Represents a many-to-many relationship between a DataCollection and its Investigations.",
        {},
    ),
    "DataCollectionParameter": (
        "A parameter associated with a DataCollection",
        {
            "dataCollection": "The associated DataCollection",
        },
    ),
    "DataPublication": (
        "A curated data publication",
        {
            "description": "Abstract",
            "pid": "Persistent Identifier of the publication, such as a DOI",
            "publicationDate": "Date when the data was made publicly available",
            "subject": "List of keywords",
            "title": "Title of the publication",
        },
    ),
    "DataPublicationDate": (
        "A date relevant for the publication",
        {
            "date": "Use ISO 8601 format, may also be a range",
            "dateType": "Type of the date, see DataCite property dateType for suggested values",
        },
    ),
    "DataPublicationFunding": (
        "Represents a many-to-many relationship between a data publication and a funding reference",
        {},
    ),
    "DataPublicationType": (
        "A type of data publication, for example, whole investigation, user-selected datasets/files. This is likely to be for facility internal purposes following their own classification scheme and allowing, for example, the front end to display them in different ways.",
        {
            "description": "A description of this data publicaion type",
            "facility": "The facility which has defined this data publication type",
            "name": "A short name identifying this data publication type within the facility",
        },
    ),
    "DataPublicationUser": (
        "Author, e.g. creator of or contributor to a data publication",
        {
            "contributorType": 'Role of that user in the publication, see DataCite property contributorType for suggested values or use "Creator"',
            "email": "The email address for the user that should be exposed in the publication, if any",
            "familyName": "The family name of the user",
            "fullName": "May include title",
            "givenName": "The given name of the user",
            "orderKey": "Defines an order among the contributors",
        },
    ),
    "Datafile": (
        "A data file",
        {
            "checksum": "Checksum of file represented as a string",
            "datafileCreateTime": "Date of creation of the actual file rather than storing the metadata",
            "datafileModTime": "Date of modification of the actual file rather than of the metadata",
            "dataset": "The dataset which holds this file",
            "description": "A full description of the file contents",
            "doi": "The Digital Object Identifier associated with this data file",
            "fileSize": "Expressed in bytes",
            "location": "The logical location of the file - which may also be the physical location",
            "name": "A name given to the file",
        },
    ),
    "DatafileFormat": (
        "A data file format",
        {
            "datafiles": "Files with this format",
            "description": "An informal description of the format",
            "facility": "The facility which has defined this format",
            "name": 'A short name identifying the format -e.g. "mp3" within the facility',
            "type": "Holds the underlying format - such as binary or text",
            "version": "The version if needed.  The version code may be part of the basic name",
        },
    ),
    "DatafileParameter": (
        "A parameter associated with a data file",
        {
            "datafile": "The associated data file",
        },
    ),
    "Dataset": (
        "A collection of data files and part of an investigation",
        {
            "complete": "May be set to true when all data files and parameters have been added to the data set. The precise meaning is facility dependent.",
            "datafiles": "The data files within the dataset",
            "description": "An informal description of the data set",
            "doi": "The Digital Object Identifier associated with this data set",
            "fileCount": "The total number of datafiles within this dataset",
            "fileSize": "The cumulative total size of the data files within this dataset",
            "location": "Identifies a location from which all the files of the data set might be accessed. It might be a directory",
            "name": "A short name for the data set",
        },
    ),
    "DatasetInstrument": (
        "Represents a many-to-many relationship between an instrument and a dataset with data collected at that instrument",
        {},
    ),
    "DatasetParameter": (
        "A parameter associated with a data set",
        {
            "dataset": "The associated data set",
        },
    ),
    "DatasetTechnique": (
        "Represents a many-to-many relationship between a dataset and the experimental technique being used to create that Dataset",
        {},
    ),
    "DatasetType": (
        "A type of data set",
        {
            "description": "A description of this data set type",
            "facility": "The facility which has defined this data set type",
            "name": "A short name identifying this data set type within the facility",
        },
    ),
    "EntityBaseBean": (
        "",
        {},
    ),
    "Facility": (
        "An experimental facility",
        {
            "daysUntilRelease": "The number of days before data is made freely available after collecting it.",
            "description": "A description of this facility",
            "fullName": "The full name of the facility",
            "name": "A short name identifying this facility",
            "url": "A URL associated with this facility",
        },
    ),
    "FacilityCycle": (
        "An operating cycle within a facility",
        {
            "description": "A description of this facility cycle",
            "endDate": "End of cycle",
            "facility": "The facility which has this cycle",
            "name": "A short name identifying this facility cycle within the facility",
            "startDate": "Start of cycle",
        },
    ),
    "FundingReference": (
        "Information about financial support",
        {
            "acknowledgement": "Human readable acknowledgement for the funding, maybe using a specific formulation requested by the funder",
            "awardNumber": 'Code assigned by the funder to identify the grant, suggest to use ":unas" from the Datacite schema if there is no such identifier',
            "awardTitle": "Title or name of the grant",
            "funderIdentifier": "Unique identifier of the funding entity, such as a Crossref Funder ID",
            "funderName": "Name of the funding entity",
        },
    ),
    "Grouping": (
        "A group of users",
        {
            "name": "A short name identifying this group of users",
        },
    ),
    "Instrument": (
        "Used by a user within an investigation",
        {
            "description": "A description of this instrument",
            "facility": "The facility which has this instrument",
            "fullName": "The formal name of this instrument",
            "name": "A short name identifying this instrument within the facility",
            "pid": "A persistent identifier attributed to this instrument",
            "shifts": "Shifts associated with this instrument",
            "url": "A URL associated with this instrument",
        },
    ),
    "InstrumentScientist": (
        "Relationship between an ICAT user as an instrument scientist and the instrument",
        {},
    ),
    "Investigation": (
        "An investigation or experiment",
        {
            "doi": "The Digital Object Identifier associated with this investigation",
            "fileCount": "The total number of datafiles within this investigation",
            "fileSize": "The cumulative total size of the datasets within this investigation",
            "name": "A short name for the investigation",
            "releaseDate": "When the data will be made freely available",
            "summary": "Summary or abstract",
            "title": "Full title of the investigation",
            "visitId": "Identifier for the visit to which this investigation is related",
        },
    ),
    "InvestigationFacilityCycle": (
        "Many to many relationship between investigation and facilityCycle. Allows investigations to belong to multiple cycles at once.",
        {},
    ),
    "InvestigationFunding": (
        "Represents a many-to-many relationship between an investigation and a funding reference",
        {},
    ),
    "InvestigationGroup": (
        "Many to many relationship between investigation and group which might be used within authorization rules. Please see InvestigationUser",
        {
            "role": "A role showing the position of the members of the group with respect to the investigation",
        },
    ),
    "InvestigationInstrument": (
        "Represents a many-to-many relationship between an investigation and the instruments assigned",
        {},
    ),
    "InvestigationParameter": (
        "A parameter associated with an investigation",
        {
            "investigation": "The associated investigation",
        },
    ),
    "InvestigationType": (
        "A type of investigation",
        {
            "description": "A description of this type of investigation",
            "facility": "The facility which has defined this investigation type",
            "name": "A short name identifying this type of investigation",
        },
    ),
    "InvestigationUser": (
        "Many to many relationship between investigation and user. It is expected that this will show the association of individual users with an investigation which might be derived from the proposal. It may also be used as the basis of authorization rules. See InvestigationGroup if you wish to separate authorization rules from who is on the proposal.",
        {
            "role": "A role such as PI showing the position of the user with respect to the investigation",
        },
    ),
    "Job": (
        "A run of an application with its related inputs and outputs",
        {},
    ),
    "Keyword": (
        "Must be related to an investigation",
        {
            "investigation": "The investigation to which this keyword applies",
            "name": "The name of the keyword",
        },
    ),
    "Parameter": (
        "",
        {
            "dateTimeValue": "The value if the parameter is a date",
            "error": "The error of the numeric parameter",
            "numericValue": "The value if the parameter is numeric",
            "rangeBottom": "The minimum value of the numeric parameter that was observed during the measurement period",
            "rangeTop": "The maximum value of the numeric parameter that was observed during the measurement period",
            "stringValue": "The value if the parameter is a string",
            "type": "The type of the parameter",
        },
    ),
    "ParameterType": (
        "A parameter type with unique name and units",
        {
            "applicableToDataCollection": "If a parameter of this type may be applied to a DataCollection",
            "applicableToDatafile": "If a parameter of this type may be applied to a data file",
            "applicableToDataset": "If a parameter of this type may be applied to a data set",
            "applicableToInvestigation": "If a parameter of this type may be applied to an investigation",
            "applicableToSample": "If a parameter of this type may be applied to a sample",
            "description": "Description of the parameter type",
            "enforced": "True if constraints are enforced",
            "facility": "The facility which has defined this data set type",
            "name": "The name of the parameter type",
            "pid": "A persistent identifier attributed to this parameter type",
            "units": "The name of the parameter type units",
            "unitsFullName": "The formal name of the parameter type units",
            "valueType": "enum with possible values: NUMERIC, STRING, DATE_AND_TIME",
            "verified": "If ordinary users are allowed to create their own parameter types this indicates that this one has been approved",
        },
    ),
    "PermissibleStringValue": (
        "Permissible value for string parameter types",
        {
            "type": "The parameter type to which this permissible string value applies",
            "value": "The value of the string",
        },
    ),
    "PublicStep": (
        "An allowed step for an INCLUDE identifed by the origin entity and the field name for navigation. Including an entry here is much more efficient than having to use the authorization rules.",
        {
            "field": "The field used to represent the relationship on the origin side",
            "origin": "The origin entity",
        },
    ),
    "Publication": (
        "A publication",
        {
            "doi": "The Digital Object Identifier associated with this publication",
            "fullReference": "A reference in the form to be used for citation",
            "repository": "The name of a repository where the publication is held",
            "repositoryId": "The id of the publication within the repository",
            "url": "A URL from which the publication may be downloaded",
        },
    ),
    "RelatedDatafile": (
        "Used to represent an arbitrary relationship between data files",
        {
            "relation": 'Identifies the type of relationship between the two datafiles - e.g. "COPY"',
        },
    ),
    "RelatedItem": (
        "A reference to an external resource or item that is related to a data publication, such as a scientific article that is based on the data or the instrument that has been used to collect the data",
        {
            "fullReference": "The full reference for the related resource as it should be displayed on the landing page",
            "identifier": "The identifier of the related resource",
            "relatedItemType": "The type of the related resource, see DataCite property resourceTypeGeneral for suggested values",
            "relationType": "Description of the relationship with the related resource, see DataCite property relationType for suggested values",
            "title": "Title or name of the related resource",
        },
    ),
    "Rule": (
        "An authorization rule",
        {
            "crudFlags": 'Contains letters from the set "CRUD"',
            "what": "To what the rules applies",
        },
    ),
    "Sample": (
        "A sample to be used in an investigation",
        {
            "pid": "A persistent identifier attributed to this sample",
        },
    ),
    "SampleParameter": (
        "A parameter associated with a sample",
        {
            "sample": "The associated sample",
        },
    ),
    "SampleType": (
        "A sample to be used in an investigation",
        {
            "facility": "The facility which has defined this sample type",
            "molecularFormula": "The formula written as a string -e.g. C2H6O2 for ethylene glycol",
            "safetyInformation": "Any safety information related to this sample",
        },
    ),
    "Shift": (
        "A period of time related to an investigation",
        {
            "instrument": "The instrument, if this shift is associated to one",
        },
    ),
    "Study": (
        "A study which may be related to an investigation",
        {
            "description": "A description of the study and its purpose",
            "endDate": "The end date of this study",
            "name": "The name of the study",
            "pid": "A persistent identifier attributed to this study",
            "startDate": "The start date of this study",
            "status": "The status of the study. Possible values are: NEW, IN_PROGRESS, COMPLETE, CANCELLED",
            "user": "The user responsible for the study",
        },
    ),
    "StudyInvestigation": (
        "Many to many relationship between study and investigation",
        {},
    ),
    "Subject": (
        "Subject, keyword, classification code, or key phrase describing a data publication",
        {
            "classificationCode": "Classification code for the subject",
            "dataPublication": "The data publication this subject is associated with",
            "name": "The name of the subject or keyword",
            "pid": "Persistent identifier for the subject",
            "schemeURI": "URI of the subject scheme or controlled vocabulary",
            "subjectScheme": "Name of the subject scheme or controlled vocabulary",
            "valueURI": "URI for the specific subject term",
        },
    ),
    "Technique": (
        "Represents an experimental technique",
        {
            "description": "An informal description for the technique",
            "name": "A short name for the technique",
            "pid": "A persistent identifier attributed to the technique, ideally referring to a vocabulary term",
        },
    ),
    "User": (
        "A user of the facility",
        {
            "affiliation": "The home institute or other affiliation of the user",
            "email": "An email address for the user",
            "familyName": "The family name of the user",
            "fullName": "May include title",
            "givenName": "The given name of the user",
            "name": "The name of the user to match that provided by the authentication mechanism",
            "orcidId": "An ORCID iD for the user",
        },
    ),
    "UserGroup": (
        "Many to many relationship between user and group",
        {},
    ),
}


COMMENTS_4_3: EntityComments = {
    "Application": (
        "Some piece of software",
        {
            "name": "A short name for the software - e.g. mantid",
        },
    ),
    "DataCollection": (
        "A set of Datafiles and Datasets which can span investigations and facilities. Note that it has no constraint fields. It is expected that a DataCollection would be identified by its DataCollectionParameters or its relationship to a Job.",
        {},
    ),
    "DataCollectionDatafile": (
        "Represents a many-to-many relationship between a DataCollection and its Datafiles.",
        {},
    ),
    "DataCollectionDataset": (
        "Represents a many-to-many relationship between a DataCollection and its datasets.",
        {},
    ),
    "DataCollectionParameter": (
        "A parameter associated with a DataCollection",
        {
            "dataCollection": "The associated DataCollection",
        },
    ),
    "Datafile": (
        "A data file",
        {
            "checksum": "Checksum of file represented as a string",
            "datafileCreateTime": "Date of creation of the actual file rather than storing the metadata",
            "datafileModTime": "Date of modification of the actual file rather than of the metadata",
            "dataset": "The dataset which holds this file",
            "description": "A full description of the file contents",
            "doi": "The Digital Object Identifier associated with this data file",
            "fileSize": "Expressed in bytes",
            "location": "The logical location of the file - which may also be the physical location",
            "name": "A name given to the file",
        },
    ),
    "DatafileFormat": (
        "A data file format",
        {
            "datafiles": "Files with this format",
            "description": "An informal description of the format",
            "facility": "The facility which has defined this format",
            "name": 'A short name identifying the format -e.g. "mp3" within the facility',
            "type": "Holds the underlying format - such as binary or text",
            "version": "The version if needed.  The version code may be part of the basic name",
        },
    ),
    "DatafileParameter": (
        "A parameter associated with a data file",
        {
            "datafile": "The associated data file",
        },
    ),
    "Dataset": (
        "A collection of data files and part of an investigation",
        {
            "complete": "May be set to true when all data files and parameters have been added to the data set. The precise meaning is facility dependent.",
            "datafiles": "The data files within the dataset",
            "description": "An informal description of the data set",
            "doi": "The Digital Object Identifier associated with this data set",
            "location": "Identifies a location from which all the files of the data set might be accessed. It might be a directory",
            "name": "A short name for the data set",
        },
    ),
    "DatasetParameter": (
        "A parameter associated with a data set",
        {
            "dataset": "The associated data set",
        },
    ),
    "DatasetType": (
        "A type of data set",
        {
            "description": "A description of this data set type",
            "facility": "The facility which has defined this data set type",
            "name": "A short name identifying this data set type within the facility",
        },
    ),
    "EntityBaseBean": (
        "",
        {},
    ),
    "Facility": (
        "An experimental facility",
        {
            "daysUntilRelease": "The number of days before data is made freely available after collecting it.",
            "description": "A description of this facility",
            "fullName": "The full name of the facility",
            "name": "A short name identifying this facility",
            "url": "A URL associated with this facility",
        },
    ),
    "FacilityCycle": (
        "An operating cycle within a facility",
        {
            "description": "A description of this facility cycle",
            "endDate": "End of cycle",
            "facility": "The facility which has this cycle",
            "name": "A short name identifying this facility cycle within the facility",
            "startDate": "Start of cycle",
        },
    ),
    "Grouping": (
        "A group of users",
        {
            "name": "A short name identifying this group of users",
        },
    ),
    "Instrument": (
        "Used by a user within an investigation",
        {
            "description": "A description of this instrument",
            "facility": "The facility which has this instrument",
            "fullName": "The formal name of this instrument",
            "name": "A short name identifying this instrument within the facility",
            "url": "A URL associated with this instrument",
        },
    ),
    "InstrumentScientist": (
        "Relationship between an ICAT user as an instrument scientist and the instrument",
        {},
    ),
    "Investigation": (
        "An investigation or experiment",
        {
            "doi": "The Digital Object Identifier associated with this investigation",
            "name": "A short name for the investigation",
            "releaseDate": "When the data will be made freely available",
            "summary": "Summary or abstract",
            "title": "Full title of the investigation",
            "visitId": "Identifier for the visit to which this investigation is related",
        },
    ),
    "InvestigationInstrument": (
        "Represents a many-to-many relationship between an investigation and the instruments assigned",
        {},
    ),
    "InvestigationParameter": (
        "A parameter associated with an investigation",
        {
            "investigation": "The associated investigation",
        },
    ),
    "InvestigationType": (
        "A type of investigation",
        {
            "description": "A description of this type of investigation",
            "facility": "The facility which has defined this investigation type",
            "name": "A short name identifying this type of investigation",
        },
    ),
    "InvestigationUser": (
        "Many to many relationship between investigation and user. It is expected that this will show the association of individual users with an investigation which might be derived from the proposal. It may also be used as the basis of authorization rules. See InvestigationGroup if you wish to separate authorization rules from who is on the proposal.",
        {
            "role": "A role such as PI showing the position of the user with respect to the investigation",
        },
    ),
    "Job": (
        "A run of an application with its related inputs and outputs",
        {},
    ),
    "Keyword": (
        "Must be related to an investigation",
        {
            "investigation": "The investigation to which this keyword applies",
            "name": "The name of the keyword",
        },
    ),
    "Log": (
        "To store call logs if configured in icat.properties",
        {
            "duration": "Duration of call in milliseconds",
            "entityId": "The id of the first entity involved if any for a read or write operation",
            "entityName": "The name of the first entity involved if any for a read or write operation",
            "operation": "The operation",
            "query": "The query specified in a read operation",
        },
    ),
    "Parameter": (
        "",
        {
            "dateTimeValue": "The value if the parameter is a date",
            "error": "The error of the numeric parameter",
            "numericValue": "The value if the parameter is numeric",
            "rangeBottom": "The minimum value of the numeric parameter that was observed during the measurement period",
            "rangeTop": "The maximum value of the numeric parameter that was observed during the measurement period",
            "stringValue": "The value if the parameter is a string",
            "type": "The type of the parameter",
        },
    ),
    "ParameterType": (
        "A parameter type with unique name and units",
        {
            "applicableToDataCollection": "If a parameter of this type may be applied to a DataCollection",
            "applicableToDatafile": "If a parameter of this type may be applied to a data file",
            "applicableToDataset": "If a parameter of this type may be applied to a data set",
            "applicableToInvestigation": "If a parameter of this type may be applied to an investigation",
            "applicableToSample": "If a parameter of this type may be applied to a sample",
            "description": "Description of the parameter type",
            "enforced": "True if constraints are enforced",
            "facility": "The facility which has defined this data set type",
            "name": "The name of the parameter type",
            "units": "The name of the parameter type units",
            "unitsFullName": "The formal name of the parameter type units",
            "valueType": "enum with possible values: NUMERIC, STRING, DATE_AND_TIME",
            "verified": "If ordinary users are allowed to create their own parameter types this indicates that this one has been approved",
        },
    ),
    "PermissibleStringValue": (
        "Permissible value for string parameter types",
        {
            "type": "The parameter type to which this permissible string value applies",
            "value": "The value of the string",
        },
    ),
    "PublicStep": (
        "An allowed step for an INCLUDE identifed by the origin entity and the field name for navigation. Including an entry here is much more efficient than having to use the authorization rules.",
        {
            "field": "The field used to represent the relationship on the origin side",
            "origin": "The origin entity",
        },
    ),
    "Publication": (
        "A publication",
        {
            "doi": "The Digital Object Identifier associated with this publication",
            "fullReference": "A reference in the form to be used for citation",
            "repository": "The name of a repository where the publication is held",
            "repositoryId": "The id of the publication within the repository",
            "url": "A URL from which the publication may be downloaded",
        },
    ),
    "RelatedDatafile": (
        "Used to represent an arbitrary relationship between data files",
        {
            "relation": 'Identifies the type of relationship between the two datafiles - e.g. "COPY"',
        },
    ),
    "Rule": (
        "An authorization rule",
        {
            "crudFlags": 'Contains letters from the set "CRUD"',
            "what": "To what the rules applies",
        },
    ),
    "Sample": (
        "A sample to be used in an investigation",
        {},
    ),
    "SampleParameter": (
        "A parameter associated with a sample",
        {
            "sample": "The associated sample",
        },
    ),
    "SampleType": (
        "A sample to be used in an investigation",
        {
            "facility": "The facility which has defined this sample type",
            "molecularFormula": "The formula written as a string -e.g. C2H6O2 for ethylene glycol",
            "safetyInformation": "Any safety information related to this sample",
        },
    ),
    "Shift": (
        "A period of time related to an investigation",
        {},
    ),
    "Study": (
        "A study which may be related to an investigation",
        {
            "description": "A description of the study and its purpose",
            "name": "The name of the study",
            "startDate": "The start date of this study",
            "status": "The status of the study. Possible values are: NEW, IN_PROGRESS, COMPLETE, CANCELLED",
            "user": "The user responsible for the study",
        },
    ),
    "StudyInvestigation": (
        "Many to many relationship between study and investigation",
        {},
    ),
    "User": (
        "A user of the facility",
        {
            "fullName": "May include title",
            "name": "The name of the user to match that provided by the authentication mechanism",
        },
    ),
    "UserGroup": (
        "Many to many relationship between user and group",
        {},
    ),
}
